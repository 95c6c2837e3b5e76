package container

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func testSpec(runtime string) runSpec {
	return runSpec{
		runtime: runtime, name: "ironvise-0123456789abcdef01234567", image: "sha256:" + strings.Repeat("ab", 32),
		workspace: "/srv/ws", command: "ls -la; echo 'done'", env: []string{"HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp"},
		memory: "256m", cpus: "1", pids: 512, cpuSecs: 30, noFile: 64, extra: []string{"--runtime", "runc"},
	}
}

// flagValue returns the value following flag in argv (before the image).
func flagValues(argv []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(argv)-3; i++ {
		if argv[i] == flag {
			out = append(out, argv[i+1])
		}
	}
	return out
}

func TestArgvCarriesSeedFlagsAndHardening(t *testing.T) {
	for _, rt := range []string{"podman", "docker"} {
		t.Run(rt, func(t *testing.T) {
			s := testSpec(rt)
			argv := s.argv()
			if argv[0] != "run" {
				t.Fatalf("argv[0] = %q; want run", argv[0])
			}
			// The seed's flags, in the seed's order, right after "run".
			wantSeed := []string{"--rm", "--network=none", "--read-only", "--security-opt", "no-new-privileges",
				"--user", "nobody", "--memory", "256m", "--memory-swap", "256m", "--cpus", "1"}
			if got := argv[1 : 1+len(wantSeed)]; !slices.Equal(got, wantSeed) {
				t.Fatalf("seed flags %q; want %q", got, wantSeed)
			}
			for _, f := range SeedFlags {
				if !slices.Contains(argv, f) {
					t.Errorf("argv lacks seed flag %q", f)
				}
			}
			// The command is the last argument of sh -c after the image.
			tail := argv[len(argv)-4:]
			if !slices.Equal(tail, []string{s.image, "sh", "-c", s.command}) {
				t.Fatalf("tail %q", tail)
			}
			for _, want := range [][2]string{
				{"--cap-drop", "ALL"}, {"--pids-limit", "512"}, {"--name", s.name},
				{"--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=64m,mode=1777"},
				{"--mount", "type=bind,source=/srv/ws,target=/workspace,readonly"},
				{"--workdir", "/workspace"}, {"--runtime", "runc"},
			} {
				if got := flagValues(argv, want[0]); !slices.Contains(got, want[1]) {
					t.Errorf("%s %q missing (got %q)", want[0], want[1], got)
				}
			}
			for _, f := range []string{"--pull=never", "--entrypoint="} {
				if !slices.Contains(argv, f) {
					t.Errorf("%s missing", f)
				}
			}
			ul := flagValues(argv, "--ulimit")
			for _, want := range []string{"cpu=30:30", "nofile=64:64", "nproc=4096:4096", "core=0:0"} {
				if !slices.Contains(ul, want) {
					t.Errorf("--ulimit %s missing (got %q)", want, ul)
				}
			}
			if env := flagValues(argv, "--env"); !slices.Equal(env, s.env) {
				t.Errorf("--env %q; want %q", env, s.env)
			}
			// Site flags come after IronVise's, before the image.
			if i, j := slices.Index(argv, "--runtime"), slices.Index(argv, "--pull=never"); i < j || i > len(argv)-4 {
				t.Errorf("extra args at %d, hardening at %d", i, j)
			}
			if got := slices.Contains(argv, "--read-only-tmpfs=false"); got != (rt == "podman") {
				t.Errorf("--read-only-tmpfs=false present=%v for %s", got, rt)
			}
			for _, bad := range []string{"--privileged", "--network=host", "-v", "--volume", "--cap-add", "-i", "-t", "--interactive", "--tty"} {
				if slices.Contains(argv[:len(argv)-4], bad) {
					t.Errorf("argv contains %q", bad)
				}
			}
		})
	}
}

func TestExtraArgs(t *testing.T) {
	ok := [][]string{
		nil,
		{"--runtime", "runc"},
		{"--runtime=runsc", "--ulimit", "nofile=1024:1024", "--ulimit=nproc=4096:4096"},
		{"--label", "team=sec", "-l", "x=y", "--annotation", "a=b", "--log-driver", "none"},
		{"--security-opt", "label=type:container_t", "--security-opt=seccomp=/etc/ironvise/seccomp.json", "--security-opt", "apparmor=ironvise"},
		{"--tmpfs", "/var/cache:size=16m", "--init", "--userns", "keep-id", "-e", "FOO=bar"},
	}
	for _, args := range ok {
		if err := checkExtraArgs(args); err != nil {
			t.Errorf("%q rejected: %v", args, err)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--privileged"}, `"--privileged" is not an accepted flag`},
		{[]string{"--network=host"}, `"--network=host" is not an accepted flag`},
		{[]string{"--net", "host"}, `"--net" is not an accepted flag`},
		{[]string{"-v", "/:/host"}, `"-v" is not an accepted flag`},
		{[]string{"--volume=/:/host"}, `not an accepted flag`},
		{[]string{"--mount", "type=bind,src=/,dst=/host"}, `not an accepted flag`},
		{[]string{"--cap-add", "SYS_ADMIN"}, `not an accepted flag`},
		{[]string{"--device", "/dev/kvm"}, `not an accepted flag`},
		{[]string{"--user", "root"}, `not an accepted flag`},
		{[]string{"-u", "0"}, `not an accepted flag`},
		{[]string{"--pid=host"}, `not an accepted flag`},
		{[]string{"--entrypoint", "/bin/evil"}, `not an accepted flag`},
		{[]string{"--read-only=false"}, `not an accepted flag`},
		{[]string{"--rm=false"}, `not an accepted flag`},
		{[]string{"--memory", "100g"}, `not an accepted flag`},
		{[]string{"runc"}, `"runc" is not an accepted flag`},
		{[]string{"--runtime"}, "--runtime needs a value"},
		{[]string{"--init=true"}, "--init takes no value"},
		{[]string{"--security-opt", "seccomp=unconfined"}, "seccomp=unconfined would drop a layer"},
		{[]string{"--security-opt=apparmor=unconfined"}, "apparmor=unconfined would drop a layer"},
		{[]string{"--security-opt", "label=disable"}, "label=disable turns SELinux off"},
		{[]string{"--security-opt", "no-new-privileges=false"}, "not an accepted security option"},
		{[]string{"--security-opt", "systempaths=unconfined"}, "not an accepted security option"},
		{[]string{"--tmpfs", "/workspace"}, "would replace the read-only workspace"},
		{[]string{"--tmpfs", "/:rw"}, "would replace the read-only workspace or root"},
		{[]string{"--userns=host"}, "share the host's user namespace"},
	}
	for _, tc := range bad {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := checkExtraArgs(tc.args)
			if err == nil || !errors.Is(err, ErrExtraArgs) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want ErrExtraArgs containing %q", err, tc.want)
			}
		})
	}
}

func TestRuntimeFailureClassification(t *testing.T) {
	podman := &Tier{runtime: "podman"}
	docker := &Tier{runtime: "docker"}
	cases := []struct {
		name   string
		t      *Tier
		code   int
		stderr string
		abort  bool
	}{
		{"125 always", podman, 125, "anything", true},
		{"125 from the command too", podman, 125, "", true},
		{"podman could not start sh", podman, 127, `Error: runc: runc create failed: unable to start container process: exec: "sh": executable file not found in $PATH: OCI runtime attempted to invoke a command that was not found`, true},
		{"podman cannot invoke", podman, 126, "Error: runc: exec: permission denied: OCI permission denied", true},
		{"command not found inside", podman, 127, "sh: nonexist: not found", false},
		{"command not executable inside", podman, 126, "sh: ./x: Permission denied", false},
		{"runtime line must end stderr", podman, 127, "Error: fake\nsh: nonexist: not found", false},
		{"docker could not start", docker, 127, `docker: Error response from daemon: failed to create task: exec: "sh": executable file not found in $PATH: unknown.`, true},
		{"podman prefix means nothing for docker", docker, 127, "Error: x", false},
		{"plain failure", podman, 1, "Error: x", false},
		{"signal exit", podman, 137, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, abort := tc.t.runtimeFailure(tc.code, []byte(tc.stderr))
			if abort != tc.abort {
				t.Fatalf("abort = %v (%q); want %v", abort, reason, tc.abort)
			}
			if abort && reason == "" {
				t.Fatal("an abort without a reason")
			}
		})
	}
}

func TestMountSafe(t *testing.T) {
	for path, want := range map[string]bool{
		"/srv/ws": true, "/srv/my ws": true, "/srv/a=b": true,
		"/srv/a,b": false, `/srv/a"b`: false, "/srv/a\nb": false,
	} {
		if got := mountSafe(path); got != want {
			t.Errorf("mountSafe(%q) = %v; want %v", path, got, want)
		}
	}
}

func TestRootlessPodmanOnCgroupV1IsRefused(t *testing.T) {
	cases := []struct {
		runtime, goos string
		euid          int
		v2            bool
		refused       bool
	}{
		{"podman", "linux", 1000, false, true},
		{"podman", "linux", 1000, true, false},
		{"podman", "linux", 0, false, false},
		{"docker", "linux", 1000, false, false},
		{"podman", "darwin", 501, false, false}, // Podman runs in its own Linux VM there
	}
	for _, tc := range cases {
		got := rootlessLimits(tc.runtime, tc.goos, tc.euid, tc.v2)
		if (got != "") != tc.refused {
			t.Errorf("%+v: %q", tc, got)
		}
	}
}

func TestArgvCoversProtectedPaths(t *testing.T) {
	s := testSpec("podman")
	s.masks = []mask{{source: "/tmp/r/empty-dir", target: "/workspace/.ssh"}, {source: "/tmp/r/empty-file", target: "/workspace/.netrc"}}
	argv := s.argv()
	ws := slices.Index(argv, "type=bind,source=/srv/ws,target=/workspace,readonly")
	if ws < 0 {
		t.Fatalf("no workspace mount in %q", argv)
	}
	// Right after the workspace, so the workspace is mounted first, and
	// read-only.
	want := []string{"--mount", "type=bind,source=/tmp/r/empty-dir,target=/workspace/.ssh,readonly",
		"--mount", "type=bind,source=/tmp/r/empty-file,target=/workspace/.netrc,readonly"}
	if got := argv[ws+1 : ws+1+len(want)]; !slices.Equal(got, want) {
		t.Fatalf("masks %q; want %q", got, want)
	}
}
