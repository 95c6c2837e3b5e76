package config

import (
	"slices"
	"strings"
	"testing"
)

func TestContainerAndMicroVMDefaults(t *testing.T) {
	c := mustLoad(t, "HOME", "/h")
	d, f := c.Sandbox.Docker, c.Sandbox.Firecracker
	if d.Runtime != "auto" || d.Memory != "256m" || d.MemoryBytes != 256<<20 || d.CPUs != "1" || d.TimeoutSecs != 30 || d.ExtraArgs != nil {
		t.Errorf("docker defaults: %+v", d)
	}
	if f.Kernel != "/opt/ectoledger/vmlinux" || f.Rootfs != "/opt/ectoledger/rootfs.ext4" || f.VCPUs != 1 || f.MemMiB != 128 || f.TimeoutSecs != 30 {
		t.Errorf("firecracker defaults: %+v", f)
	}
}

func TestContainerAndMicroVMOverrides(t *testing.T) {
	c, err := Load(MapLookup(map[string]string{
		"HOME": "/h", "ECTO_DOCKER_RUNTIME": "Podman", "ECTO_DOCKER_MEMORY": "1G", "ECTO_DOCKER_CPUS": "0.5",
		"ECTO_DOCKER_TIMEOUT": "90", "ECTO_DOCKER_EXTRA_ARGS": `--runtime runc --ulimit 'nofile=1024:1024' --label "team=a b"`,
		"ECTO_FC_KERNEL": "/k/vmlinux", "ECTO_FC_ROOTFS": "/k/../r/rootfs.ext4", "ECTO_FC_VCPUS": "2",
		"ECTO_FC_MEM_MIB": "256", "ECTO_FC_TIMEOUT_SECS": "5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	d, f := c.Sandbox.Docker, c.Sandbox.Firecracker
	wantArgs := []string{"--runtime", "runc", "--ulimit", "nofile=1024:1024", "--label", "team=a b"}
	if d.Runtime != "podman" || d.Memory != "1g" || d.MemoryBytes != 1<<30 || d.CPUs != "0.5" || d.TimeoutSecs != 90 || !slices.Equal(d.ExtraArgs, wantArgs) {
		t.Errorf("docker: %+v", d)
	}
	if f.Kernel != "/k/vmlinux" || f.Rootfs != "/r/rootfs.ext4" || f.VCPUs != 2 || f.MemMiB != 256 || f.TimeoutSecs != 5 {
		t.Errorf("firecracker: %+v", f)
	}
}

func TestContainerAndMicroVMRejectMalformed(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"ECTO_DOCKER_RUNTIME", "containerd", `ECTO_DOCKER_RUNTIME="containerd": unknown value (accepted: auto, docker, podman)`},
		{"ECTO_DOCKER_MEMORY", "256", `ECTO_DOCKER_MEMORY="256": not a memory size between 6m and 1024g`},
		{"ECTO_DOCKER_MEMORY", "256mb", `ECTO_DOCKER_MEMORY="256mb"`},
		{"ECTO_DOCKER_MEMORY", "-1m", `ECTO_DOCKER_MEMORY="-1m"`},
		{"ECTO_DOCKER_MEMORY", "+1g", `ECTO_DOCKER_MEMORY="+1g"`},
		{"ECTO_DOCKER_MEMORY", "2048g", `ECTO_DOCKER_MEMORY="2048g"`},
		{"ECTO_DOCKER_MEMORY", "99999999999999999999g", `ECTO_DOCKER_MEMORY="99999999999999999999g"`},
		{"ECTO_DOCKER_MEMORY", "m", `ECTO_DOCKER_MEMORY="m"`},
		{"ECTO_DOCKER_CPUS", "0", `ECTO_DOCKER_CPUS="0": not a CPU count (accepted: a decimal number greater than 0 and at most 1024, e.g. 1 or 0.5)`},
		{"ECTO_DOCKER_CPUS", "1.", `ECTO_DOCKER_CPUS="1."`},
		{"ECTO_DOCKER_CPUS", ".5", `ECTO_DOCKER_CPUS=".5"`},
		{"ECTO_DOCKER_CPUS", "1e3", `ECTO_DOCKER_CPUS="1e3"`},
		{"ECTO_DOCKER_CPUS", "0.0001", `ECTO_DOCKER_CPUS="0.0001"`},
		{"ECTO_DOCKER_CPUS", "NaN", `ECTO_DOCKER_CPUS="NaN"`},
		{"ECTO_DOCKER_CPUS", "2000", `ECTO_DOCKER_CPUS="2000"`},
		{"ECTO_DOCKER_TIMEOUT", "30s", `ECTO_DOCKER_TIMEOUT="30s": not an integer in range (accepted: 1 to 86400)`},
		{"ECTO_DOCKER_TIMEOUT", "0", `ECTO_DOCKER_TIMEOUT="0"`},
		{"ECTO_DOCKER_EXTRA_ARGS", `--label 'x`, `ECTO_DOCKER_EXTRA_ARGS="--label 'x": unterminated single quote`},
		{"ECTO_DOCKER_EXTRA_ARGS", `--label $(id)`, `ECTO_DOCKER_EXTRA_ARGS="--label $(id)": shell syntax '$' is not supported`},
		{"ECTO_DOCKER_EXTRA_ARGS", "--runtime runc; rm -rf /", `shell syntax ';' is not supported`},
		{"ECTO_FC_KERNEL", "vmlinux", `ECTO_FC_KERNEL="vmlinux": not an absolute path`},
		{"ECTO_FC_ROOTFS", "./rootfs.ext4", `ECTO_FC_ROOTFS="./rootfs.ext4": not an absolute path`},
		{"ECTO_FC_VCPUS", "0", `ECTO_FC_VCPUS="0": not an integer in range (accepted: 1 to 32)`},
		{"ECTO_FC_VCPUS", "33", `ECTO_FC_VCPUS="33"`},
		{"ECTO_FC_MEM_MIB", "16", `ECTO_FC_MEM_MIB="16": not an integer in range (accepted: 32 to 1048576)`},
		{"ECTO_FC_MEM_MIB", "128M", `ECTO_FC_MEM_MIB="128M"`},
		{"ECTO_FC_TIMEOUT_SECS", "-5", `ECTO_FC_TIMEOUT_SECS="-5": not an integer in range (accepted: 1 to 86400)`},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			wantRejected(t, tc.name, tc.value, tc.want)
		})
	}
}

func TestMemorySizes(t *testing.T) {
	cases := []struct {
		in    string
		norm  string
		bytes int64
	}{
		{"256m", "256m", 256 << 20},
		{"256M", "256m", 256 << 20},
		{"6m", "6m", 6 << 20},
		{"1g", "1g", 1 << 30},
		{"524288k", "524288k", 512 << 20},
		{"268435456", "268435456", 256 << 20},
		{"268435456b", "268435456b", 256 << 20},
		{"1024g", "1024g", 1 << 40},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			c := mustLoad(t, "HOME", "/h", "ECTO_DOCKER_MEMORY", tc.in)
			if d := c.Sandbox.Docker; d.Memory != tc.norm || d.MemoryBytes != tc.bytes {
				t.Fatalf("got %q %d; want %q %d", d.Memory, d.MemoryBytes, tc.norm, tc.bytes)
			}
		})
	}
}

func TestSplitWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"   \t ", nil, ""},
		{"--runtime runc", []string{"--runtime", "runc"}, ""},
		{"  --a   b\t--c\n", []string{"--a", "b", "--c"}, ""},
		{`--label 'a b'`, []string{"--label", "a b"}, ""},
		{`--label "a b"`, []string{"--label", "a b"}, ""},
		{`--label=a\ b`, []string{"--label=a b"}, ""},
		{`x'a'"b"c`, []string{"xabc"}, ""},
		{`''`, []string{""}, ""},
		{`'$HOME' "\$x" \$y`, []string{"$HOME", "$x", "$y"}, ""},
		{`"a\"b\\c\d"`, []string{`a"b\c\d`}, ""},
		{`'it''s'`, []string{"its"}, ""},
		{"a\\\nb", []string{"ab"}, ""},
		{`a#b`, []string{"a#b"}, ""},
		{`'#' '~'`, []string{"#", "~"}, ""},
		{`$HOME`, nil, "shell syntax '$'"},
		{"`id`", nil, "shell syntax '`'"},
		{`"$HOME"`, nil, "expansion '$' inside double quotes"},
		{`a;b`, nil, "shell syntax ';'"},
		{`a | b`, nil, "shell syntax '|'"},
		{`a > f`, nil, "shell syntax '>'"},
		{`a &`, nil, "shell syntax '&'"},
		{`(a)`, nil, "shell syntax '('"},
		{`~/x`, nil, "starting with '~'"},
		{`# comment`, nil, "starting with '#'"},
		{`'open`, nil, "unterminated single quote"},
		{`"open`, nil, "unterminated double quote"},
		{`"open\"`, nil, "unterminated double quote"},
		{`end\`, nil, "trailing backslash"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := SplitWords(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzSplitWords checks that the splitter never panics and that what it
// accepts round-trips: quoting every word with single quotes and splitting
// again gives the same words.
func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{
		"--runtime runc",                // the common case
		`--label "a b" 'c d' e\ f`,      // every quoting form
		`"\$\"\\\x"`,                    // escapes inside double quotes
		"a\\\nb",                        // line continuation
		`'unterminated`,                 // error path
		"$(rm -rf /)",                   // command substitution is refused
		"\x00\xff 'é' \"ü\"",            // bytes that are not ASCII
		`''""''`,                        // empty quoted word
		"--x=\"a'b\" --y='a\"b'",        // nested quote characters
		strings.Repeat(`\ `, 100) + "x", // many escapes
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitWords(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, w := range words {
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'\''`) + "' ")
		}
		again, err := SplitWords(b.String())
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("round trip of %q: %q -> %q, %v", s, words, again, err)
		}
	})
}
