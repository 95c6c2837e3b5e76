package evidence

import (
	"context"
	"reflect"
	"testing"
)

// TestReportAndVerificationMatchSeparateCalls: the one-pass pair a --json
// result uses says exactly what BuildReport and VerifySession say apart.
func TestReportAndVerificationMatchSeparateCalls(t *testing.T) {
	ctx := context.Background()
	l := newTestLedger(t)
	id := buildFixture(t, l)
	r, v, err := ReportAndVerification(ctx, l, id)
	if err != nil {
		t.Fatal(err)
	}
	wantR, err := BuildReport(ctx, l, id)
	if err != nil {
		t.Fatal(err)
	}
	wantV, err := VerifySession(ctx, l, id)
	if err != nil {
		t.Fatal(err)
	}
	r.GeneratedAt, wantR.GeneratedAt = "", ""
	if !reflect.DeepEqual(r, wantR) {
		t.Errorf("report differs from BuildReport's")
	}
	if !reflect.DeepEqual(v, wantV) {
		t.Errorf("verification %+v; VerifySession says %+v", v, wantV)
	}
	if !v.OK || !v.FindingsOK {
		t.Errorf("the fixture session does not verify: %+v", v)
	}
}
