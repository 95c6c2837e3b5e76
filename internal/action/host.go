package action

import (
	"net/url"
	"strings"
)

// hostOf returns the host a URL dials, in the form http.Transport passes to
// DialContext (no brackets, no port).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
