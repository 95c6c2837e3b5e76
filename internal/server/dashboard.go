package server

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/web"
)

// dashboardCSP is the page's Content-Security-Policy
// (docs/design/api.md#dashboard): nothing but this origin, no forms posting
// anywhere, no <base> rewriting, and no page may frame it (a foreign page
// framing the dashboard could overlay it or hand it a token of its own: issue
// 13).
const dashboardCSP = "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboardPage is the self-contained page: the three files of web/ in one
// document. It embeds no token and no data. It is assembled on the first
// request, not when the package initialises: every process of the binary
// (each `ironvise exec`) initialises this package but only serve uses it.
var dashboardPage = sync.OnceValue(func() []byte {
	return []byte(strings.Replace(strings.Replace(web.Index, "/*STYLE*/", web.Style, 1), "/*SCRIPT*/", web.Script, 1))
})

// handleDashboard is route 1.
func (s *Server) handleDashboard(rc *reqCtx) {
	h := rc.w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("Cache-Control", "no-store")
	page := dashboardPage()
	h.Set("Content-Length", strconv.Itoa(len(page)))
	rc.w.WriteHeader(http.StatusOK)
	rc.status = http.StatusOK
	if rc.r.Method != http.MethodHead {
		rc.w.Write(page)
	}
}
