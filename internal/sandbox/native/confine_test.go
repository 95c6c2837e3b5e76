package native

import (
	"slices"
	"strings"
	"testing"
)

func TestProfileModifiersCopy(t *testing.T) {
	base := HTTPSClient()
	wider := base.WithReadPaths("/etc/ironvise/ca.pem")
	wider2 := wider.WithReadPaths("/srv/extra")
	best := base.BestEffort()
	if len(base.extra) != 0 || base.bestEffort {
		t.Fatalf("a modifier changed the preset: %+v", base)
	}
	if !slices.Equal(wider.extra, []string{"/etc/ironvise/ca.pem"}) {
		t.Fatalf("WithReadPaths on a copy changed an earlier copy: %v", wider.extra)
	}
	if !slices.Equal(wider2.extra, []string{"/etc/ironvise/ca.pem", "/srv/extra"}) || !best.bestEffort || best.Name() != "https-client" {
		t.Fatalf("modifiers: %+v %+v", wider2, best)
	}
	for _, p := range slices.Concat(base.readFiles, base.readDirs) {
		// Security: the preset must never grant a secrets directory or
		// anything writable-looking.
		if p == "/etc" || p == "/etc/ssl" || strings.HasPrefix(p, "/etc/ssl/private") || p == "/proc" || p == "/" {
			t.Errorf("the preset grants %s", p)
		}
	}
}

func TestProfileValidate(t *testing.T) {
	cases := []struct {
		name string
		p    Profile
		want string
	}{
		{"zero profile", Profile{}, "empty profile"},
		{"relative read path", HTTPSClient().WithReadPaths("certs/ca.pem"), "not absolute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfineSelf(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ConfineSelf = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
