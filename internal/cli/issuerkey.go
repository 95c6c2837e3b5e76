package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
)

func (a *app) issuerKeyCommand() *cobra.Command {
	var asJSON bool
	var output string
	cmd := &cobra.Command{
		Use:   "issuer-key",
		Short: "Print this instance's issuer public key (what auditors pin)",
		Long: `Prints the public half of the issuer key that signs this ledger's checkpoints,
certificates and verifiable credentials, in the forms verifiers accept: hex,
did:key and the checkpoint verifier key of signed-note tools, with its key id.
Give it to auditors over a channel you trust.

The output is the issuer key file: save it with --output FILE (or redirect
standard output to a file; the bytes are the same) and pass the file to
'verify-cert', 'ironvise verify-certificate' or 'ironvise verify-vc' with
--issuer-key-file FILE. The --json form reads as a key file too. Every form
in the file must be the same key. One form alone is also a key's value for
--issuer-key, which never reads a file.

The private key never leaves $ECTO_DATA_DIR/keys/issuer.ed25519 (or
ECTO_ISSUER_KEY_FILE).`,
		Example: `  ironvise issuer-key
  ironvise issuer-key --output issuer.pub
  verify-cert --issuer-key-file issuer.pub audit.elc
  ironvise issuer-key --json | jq -r .did`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.openLedger()
			if err != nil {
				return err
			}
			defer closeLedger(l)
			pub := l.IssuerPublicKey()
			vkey, err := l.CheckpointVerifierKey()
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			keyJSON := evidence.IssuerKeyJSON{
				PublicKey: hex.EncodeToString(pub), KeyID: ledger.KeyID(pub), DID: ledger.DIDKey(pub),
				Origin: l.Origin(), CheckpointVerifierKey: vkey,
			}
			text := evidence.IssuerKeyText(pub, vkey)
			switch {
			case output == "" && asJSON:
				return a.printJSON(keyJSON)
			case output == "":
				_, err := a.stdout.Write(text)
				return err
			case asJSON:
				if text, err = json.MarshalIndent(keyJSON, "", "  "); err != nil {
					return exitCode(ExitUsage, err)
				}
				text = append(text, '\n')
			}
			if err := writeOutput(a.stdout, output, text); err != nil {
				return exitCode(ExitUsage, err)
			}
			fmt.Fprintf(a.stderr, "ironvise: wrote issuer key %s to %s (verifiers read it with --issuer-key-file %s)\n", ledger.KeyID(pub), output, output)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON (also a valid key file)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the issuer key file to this path instead of standard output")
	return cmd
}
