package secretpaths

import "slices"

// commonDeny are the credential stores of every platform, relative to a
// home directory, slash-separated.
var commonDeny = []string{
	".ssh",                // SSH private keys, known_hosts, agent config
	".gnupg",              // GnuPG private keys
	".aws",                // AWS credentials and config
	".azure",              // Azure CLI tokens
	".config/gcloud",      // Google Cloud SDK credentials
	".kube",               // kubeconfig with cluster tokens
	".docker/config.json", // registry credentials (the rest of ~/.docker is not secret)
	".netrc",              // machine passwords for curl, git, ftp
	".git-credentials",    // git's store helper, in clear text
	".npmrc",              // npm registry tokens
	".pypirc",             // PyPI upload tokens
	".password-store",     // pass(1)
	".config/gh",          // GitHub CLI tokens
	".vault-token",        // HashiCorp Vault token
	".cargo/credentials",  // crates.io token (old name)
	".cargo/credentials.toml",
	".terraform.d/credentials.tfrc.json", // Terraform Cloud tokens
}

// linuxDeny are the Linux browser profiles (cookies, saved passwords) in
// their native, Snap and Flatpak locations, and the desktop keyring.
var linuxDeny = []string{
	".mozilla",
	".config/google-chrome", ".config/google-chrome-beta", ".config/google-chrome-unstable",
	".config/chromium",
	".config/BraveSoftware",
	".config/microsoft-edge", ".config/microsoft-edge-beta", ".config/microsoft-edge-dev",
	".config/vivaldi",
	".config/opera", ".config/opera-beta", ".config/opera-developer",
	"snap/firefox", "snap/chromium", "snap/brave", "snap/opera", "snap/vivaldi",
	".var/app/org.mozilla.firefox", ".var/app/com.google.Chrome", ".var/app/org.chromium.Chromium",
	".var/app/com.brave.Browser", ".var/app/com.microsoft.Edge", ".var/app/com.vivaldi.Vivaldi",
	".var/app/com.opera.Opera", ".var/app/io.github.ungoogled_software.ungoogled_chromium",
	".local/share/keyrings", // GNOME keyring
}

// darwinDeny are the macOS browser profiles and keychains.
var darwinDeny = []string{
	"Library/Application Support/Google/Chrome",
	"Library/Application Support/Chromium",
	"Library/Application Support/BraveSoftware",
	"Library/Application Support/Microsoft Edge",
	"Library/Application Support/Vivaldi",
	"Library/Application Support/com.operasoftware.Opera",
	"Library/Application Support/Firefox",
	"Library/Safari",
	"Library/Cookies",
	"Library/Containers/com.apple.Safari",
	"Library/Keychains",
}

// windowsDeny are the Windows browser profiles, Credential Manager files
// and the Windows names of the common stores.
var windowsDeny = []string{
	"_netrc", // curl's and git's name for .netrc on Windows
	"AppData/Roaming/Mozilla/Firefox",
	"AppData/Roaming/Opera Software",
	"AppData/Local/Google/Chrome/User Data",
	"AppData/Local/Chromium/User Data",
	"AppData/Local/BraveSoftware/Brave-Browser/User Data",
	"AppData/Local/Microsoft/Edge/User Data",
	"AppData/Local/Vivaldi/User Data",
	"AppData/Roaming/gcloud",
	"AppData/Roaming/GitHub CLI",
	"AppData/Roaming/Microsoft/Credentials",
	"AppData/Local/Microsoft/Credentials",
}

// DenyList returns the mandatory deny list of goos: paths relative to a
// home directory, slash-separated, sorted. Compute applies it under every
// home; docs/checks.md lists it.
func DenyList(goos string) []string {
	out := append([]string(nil), commonDeny...)
	switch goos {
	case "darwin":
		out = append(out, darwinDeny...)
	case "windows":
		out = append(out, windowsDeny...)
	default:
		out = append(out, linuxDeny...)
	}
	slices.Sort(out)
	return out
}
