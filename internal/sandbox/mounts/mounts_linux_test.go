//go:build linux

package mounts

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDigestSeesEveryChange: Digest keeps its digest between
// changes of the table, and the next call after a mount or an unmount sees
// it, also an unmount that brings back an earlier table. The runtime's own
// poller must not hold the watched file: its polls would consume the mark
// (a file from os.Open failed the native tier's TestSpareKeyIsTheTableItCopied this way).
func TestDigestSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	before, ok := Digest()
	if !ok {
		t.Fatal("the mount table cannot be read")
	}
	if again, _ := Digest(); again != before {
		t.Fatal("the digest changed with no mount in between")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	mounted, _ := Digest()
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	if mounted == before {
		t.Fatal("a mount went unseen")
	}
	if after, _ := Digest(); after != before {
		t.Fatal("the unmount went unseen: the digest is still the mounted table's")
	}
}

func TestParse(t *testing.T) {
	in := "21 26 0:20 / /proc rw,relatime - proc proc rw\n" +
		"26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" +
		`40 26 254:0 /srv/my\040dir /mnt/a\134b\011c rw - ext4 /dev/vda rw` + "\n"
	got, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"0:20", "/", "/proc"}, {"254:0", "/", "/"}, {"254:0", "/srv/my dir", "/mnt/a\\b\tc"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for _, bad := range []string{"1 2 3\n", "1 2 nodev / /x rw - x x rw\n", `1 2 0:1 /a\04 /x rw - x x rw` + "\n", `1 2 0:1 /a\09x /x rw - x x rw` + "\n"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q parsed without an error", bad)
		}
	}
}

func TestAliasesIn(t *testing.T) {
	root := Entry{"8:1", "/", "/"}
	for _, c := range []struct {
		name   string
		mounts []Entry
		paths  []string
		want   []string
	}{
		{"no file system mounted twice", []Entry{root, {"0:20", "/", "/proc"}}, []string{"/etc/shadow"}, nil},
		{"/etc bound elsewhere", []Entry{root, {"8:1", "/etc", "/srv/etc"}}, []string{"/etc/shadow", "/home/a/.ssh", "/etc"},
			[]string{"/srv/etc/shadow", "/srv/etc"}},
		{"a home bound into a project", []Entry{root, {"0:40", "/", "/home"}, {"0:40", "/alice", "/work/p/home"}},
			[]string{"/home/alice/.ssh", "/home/bob/.ssh"}, []string{"/work/p/home/.ssh"}},
		{"the root file system mounted again", []Entry{root, {"8:1", "/", "/host"}}, []string{"/etc/shadow"}, []string{"/host/etc/shadow"}},
		{"a path under the second mount names the first", []Entry{root, {"8:1", "/etc", "/srv/etc"}}, []string{"/srv/etc/shadow"}, []string{"/etc/shadow"}},
		{"a bind of a directory onto itself adds nothing", []Entry{root, {"8:1", "/run/netns", "/run/netns"}}, []string{"/run/netns/x", "/etc/shadow"}, nil},
		{"the mount on top decides", []Entry{root, {"8:1", "/etc", "/srv/etc"}, {"0:50", "/", "/srv/etc"}}, []string{"/srv/etc/shadow"}, nil},
		{"a sibling with a common prefix is not inside", []Entry{root, {"8:1", "/etc", "/srv/etc"}}, []string{"/etcetera/x"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := AliasesIn(c.mounts, c.paths)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// BenchmarkAliases is what a tier pays per command for the other names of
// its list: a few hundred paths, the mount table unchanged since the last
// call (docs/operate/performance-log.md#exec-2026-12-04).
func BenchmarkAliases(b *testing.B) {
	paths := make([]string, 0, 200)
	for i := 0; i < 200; i++ {
		paths = append(paths, "/home/u"+string(rune('a'+i%26))+"/.config/app"+string(rune('a'+i/26)))
	}
	if _, err := Aliases(paths); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Aliases(paths); err != nil {
			b.Fatal(err)
		}
	}
}
