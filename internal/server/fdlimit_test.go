package server

import (
	"strings"
	"testing"
)

// TestConnectionCapBelowFDLimit: the cap must leave room below the
// open-file limit, so that refusing stays possible.
func TestConnectionCapBelowFDLimit(t *testing.T) {
	cases := []struct {
		explicit, limit, want int
		err                   string
	}{
		{0, 20000, 18000, ""},
		{0, 1024, 768, ""},
		{5000, 20000, 5000, ""},
		{20000, 20000, 0, "not below the open-file limit"},
		{0, 200, 0, "too low to serve"},
		{0, 0, defaultCapUnknownLimit, ""},
	}
	for _, c := range cases {
		got, err := connectionCap(c.explicit, c.limit)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("connectionCap(%d, %d) = %d, %v; want error %q", c.explicit, c.limit, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("connectionCap(%d, %d) = %d, %v; want %d", c.explicit, c.limit, got, err, c.want)
		}
	}
}
