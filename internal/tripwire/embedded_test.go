package tripwire

import (
	"net/netip"
	"slices"
	"testing"
)

func TestEmbedded(t *testing.T) {
	meta := netip.MustParseAddr("169.254.169.254")
	for _, s := range []string{
		"::ffff:169.254.169.254", "::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe",
		"64:ff9b:1:a9fe:a9:fe00::", "64:ff9b:1:0:a9:fea9:fe00:0", "2002:a9fe:a9fe::", "2001:0:a9fe:a9fe::",
		"2001:0:4136:e378:8000:63bf:5601:5601", "2606:4700::5efe:a9fe:a9fe", "2606:4700::200:5efe:a9fe:a9fe",
	} {
		if got := Embedded(netip.MustParseAddr(s)); !slices.Contains(got, meta) {
			t.Errorf("Embedded(%s) = %v; want it to contain %s", s, got, meta)
		}
	}
	// A local-use NAT64 address whose suffix is not zero has one layout.
	if got := Embedded(netip.MustParseAddr("64:ff9b:1::5db8:d70e")); len(got) != 2 || got[0] != netip.MustParseAddr("93.184.215.14") {
		t.Errorf("Embedded(64:ff9b:1::5db8:d70e) = %v; want [93.184.215.14 itself]", got)
	}
	if got := Embedded(netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")); len(got) != 1 {
		t.Errorf("a plain address carries nothing: %v", got)
	}
	if !InRanges(netip.MustParseAddr("2002:a00:1::"), []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}) {
		t.Error("InRanges must see the 6to4 address inside")
	}
}
