package evidence

import (
	"fmt"

	"github.com/ironvise/ironvise/internal/jsonerror"
)

// CertificateJSON is the --json output of verify-cert and ironvise
// verify-certificate: the result, with ok (equal to valid) and, for an
// invalid certificate, the error object every failing --json command
// prints (docs/cli.md#json-output), naming the first failed pillar.
type CertificateJSON struct {
	OK bool `json:"ok"`
	*CertificateResult
	Error *jsonerror.Detail `json:"error,omitempty"`
}

// JSON returns r as CertificateJSON; code is the exit status an invalid
// certificate gets.
func (r *CertificateResult) JSON(code int) CertificateJSON {
	out := CertificateJSON{OK: r.Valid, CertificateResult: r}
	if r.Valid {
		return out
	}
	d := &jsonerror.Detail{Kind: jsonerror.KindVerification, Code: code, Message: "the certificate is not valid"}
	if p, ok := r.FirstFailure(); ok {
		d.Check, d.Sequence, d.Problem = p.Name, p.Sequence, p.Problem
		d.Message = PillarTitle(p.Name) + " failed: " + p.Problem
		if p.Sequence != nil {
			d.Message = fmt.Sprintf("%s failed at seq %d: %s", PillarTitle(p.Name), *p.Sequence, p.Problem)
		}
	}
	out.Error = d
	return out
}
