package container

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testSpec(runtime string) runSpec {
	return runSpec{
		runtime: runtime, name: "ironvise-0123456789abcdef01234567", image: "sha256:" + strings.Repeat("ab", 32),
		workspace: "/srv/ws", command: "ls -la; echo 'done'", env: []string{"HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp"},
		memory: "256m", cpus: "1", pids: 512, cpuSecs: 30, noFile: 64, extra: []string{"--runtime", "runc"},
		seccomp: "/tmp/ironvise-runtime-1/seccomp.json", logDriver: logDriverPassthrough,
	}
}

// imageTail is how many words follow the flags: the image, then
// sh -c <preamble> sh <command>.
const imageTail = 6

// flagValues returns the values following flag in argv (before the image).
func flagValues(argv []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(argv)-imageTail; i++ {
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
			// The documented flags (docs/sandboxing.md), in order, right after "run";
			// the user numeric, uid and gid.
			wantSeed := []string{"--rm", "--network=none", "--read-only", "--security-opt", "no-new-privileges",
				"--user", "65534:65534", "--memory", "256m", "--memory-swap", "256m", "--cpus", "1"}
			if got := argv[1 : 1+len(wantSeed)]; !slices.Equal(got, wantSeed) {
				t.Fatalf("seed flags %q; want %q", got, wantSeed)
			}
			for _, f := range SeedFlags {
				if !slices.Contains(argv, f) {
					t.Errorf("argv lacks seed flag %q", f)
				}
			}
			// The command is the last argument, after the image and the
			// preamble.
			tail := argv[len(argv)-imageTail:]
			if !slices.Equal(tail, []string{s.image, "sh", "-c", confinementCheck, "sh", s.command}) {
				t.Fatalf("tail %q", tail)
			}
			for _, want := range [][2]string{
				{"--cap-drop", "ALL"}, {"--pids-limit", "512"}, {"--name", s.name},
				{"--security-opt", "seccomp=" + s.seccomp},
				{"--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=64m,mode=1777"}, {"--shm-size", "16m"},
				{"--log-driver", "passthrough"},
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
			for _, want := range []string{"cpu=30:30", "nofile=64:64", "nproc=4096:4096", "core=0:0", "msgqueue=0:0"} {
				if !slices.Contains(ul, want) {
					t.Errorf("--ulimit %s missing (got %q)", want, ul)
				}
			}
			if env := flagValues(argv, "--env"); !slices.Equal(env, s.env) {
				t.Errorf("--env %q; want %q", env, s.env)
			}
			// Site flags come after IronVise's, before the image.
			if i, j := slices.Index(argv, "--runtime"), slices.Index(argv, "--pull=never"); i < j || i > len(argv)-imageTail {
				t.Errorf("extra args at %d, hardening at %d", i, j)
			}
			if got := slices.Contains(argv, "--read-only-tmpfs=false"); got != (rt == "podman") {
				t.Errorf("--read-only-tmpfs=false present=%v for %s", got, rt)
			}
			for _, bad := range []string{"--privileged", "--network=host", "-v", "--volume", "--cap-add", "-i", "-t", "--interactive", "--tty", "--group-add", "nobody"} {
				if slices.Contains(argv[:len(argv)-imageTail], bad) {
					t.Errorf("argv contains %q", bad)
				}
			}
		})
	}
}

func TestExtraArgsAccepted(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--runtime", "runc"},
		{"--runtime=runsc", "--ulimit", "stack=8388608:8388608", "--ulimit=memlock=65536:65536"},
		{"--label", "team=sec", "-l", "x=y", "-lz=w", "--label=a=b"},
		{"--security-opt", "no-new-privileges", "--security-opt=no-new-privileges=true"},
		{"--tmpfs", "/var/cache:size=16m", "--tmpfs=/run/x:rw,size=1m,mode=1777", "--init", "--init=true", "--userns", "auto"},
		// Every spelling of --env, with literal values.
		{"-e", "FOO=bar", "-eFOO=bar", "-e=FOO=bar", "--env", "FOO=bar", "--env=FOO=", "--env=A_1=x=y", "-e", "URL=https://example.org/x"},
		{"--storage-opt", "size=1g", "--stop-timeout", "5", "--platform", "linux/amd64", "--hostname", "box",
			"--oom-score-adj", "500", "--memory-reservation", "64m", "--cpu-shares", "512", "--cpuset-cpus", "0-1,3",
			"--cpuset-mems", "0", "--blkio-weight", "300", "--userns=auto:size=65536"},
	} {
		if err := checkExtraArgs(args); err != nil {
			t.Errorf("%q rejected: %v", args, err)
		}
	}
}

// TestExtraArgsRefused: each refusal in every spelling the runtimes'
// parser takes, with the reason; environment values never appear in the
// error.
func TestExtraArgsRefused(t *testing.T) {
	bad := []struct {
		args []string
		want string
	}{
		// Item: host environment through --env.
		{[]string{"-e", "*"}, "wildcard"},
		{[]string{"-e*"}, "wildcard"},
		{[]string{"--env=ECTO*"}, "wildcard"},
		{[]string{"--env", "ECTO_KEY_PASSPHRASE"}, "bare name"},
		{[]string{"-eDATABASE_URL"}, "bare name"},
		{[]string{"-e=OPENAI_API_KEY"}, "bare name"},
		{[]string{"--env=HOME"}, "bare name"},
		{[]string{"-e", "ECTO_KEY_PASSPHRASE=s3cr3t-value"}, "treats as secret"},
		{[]string{"-eGITHUB_TOKEN=s3cr3t-value"}, "treats as secret"},
		{[]string{"--env=DATABASE_URL=s3cr3t-value"}, "treats as secret"},
		{[]string{"-e=my_api_key=s3cr3t-value"}, "treats as secret"},
		{[]string{"--env", "PGPASSWORD=s3cr3t-value"}, "treats as secret"},
		{[]string{"--env", "REPO=https://u:s3cr3t-value@example.org/r.git"}, "URL with a password"},
		{[]string{"--env", "HOME=/workspace"}, "sets HOME itself"},
		{[]string{"--env", "LD_PRELOAD=/workspace/x.so"}, "dynamic-loader"},
		{[]string{"--env", " FOO=bar"}, "not a variable name"},
		{[]string{"--env", "=bar"}, "not a variable name"},
		{[]string{"--env-file", "/etc/ironvise.env"}, "names a host path"},
		{[]string{"--env-file=/etc/ironvise.env"}, "names a host path"},
		{[]string{"--env-host"}, "whole environment"},
		{[]string{"--env-merge", "X=${HOME}"}, "expands host variables"},
		{[]string{"-e"}, "needs a value"},
		// Item: flags that name a host path.
		{[]string{"--log-opt", "path=/etc/cron.d/x"}, "names a host path"},
		{[]string{"--log-opt=path=/etc/cron.d/x"}, "names a host path"},
		{[]string{"--log-driver", "k8s-file"}, "sets the log driver itself"},
		{[]string{"--log-driver=none"}, "sets the log driver itself"},
		{[]string{"--cidfile", "/etc/x"}, "names a host path"},
		{[]string{"--conmon-pidfile=/etc/x"}, "names a host path"},
		{[]string{"--pidfile", "/etc/x"}, "names a host path"},
		{[]string{"--label-file", "/etc/shadow"}, "names a host path"},
		{[]string{"--tz=local"}, "names a host path"},
		{[]string{"--cgroup-parent", "/system.slice"}, "names a host path"},
		{[]string{"--init-path", "/tmp/evil"}, "names a host path"},
		{[]string{"--runtime", "/tmp/evil-runtime"}, "not a runtime name"},
		{[]string{"--runtime=../../tmp/evil"}, "not a runtime name"},
		{[]string{"--annotation", "run.oci.keep_original_groups=1"}, "act on annotations"},
		{[]string{"-v", "/:/host"}, "names a host path"},
		{[]string{"-v/:/host"}, "names a host path"},
		{[]string{"--volume=/:/host"}, "names a host path"},
		{[]string{"--mount", "type=bind,src=/,dst=/host"}, "names a host path"},
		{[]string{"--device", "/dev/kvm"}, "names a host path"},
		{[]string{"--secret", "x"}, "names a host path"},
		// Item: seccomp and LSM options.
		{[]string{"--security-opt", "seccomp=unconfined"}, "its own seccomp profile"},
		{[]string{"--security-opt=seccomp=/etc/ironvise/seccomp.json"}, "its own seccomp profile"},
		{[]string{"--security-opt", "seccomp:unconfined"}, "its own seccomp profile"},
		{[]string{"--security-opt", "label=disable"}, "LSM confinement"},
		{[]string{"--security-opt", "label=type:spc_t"}, "LSM confinement"},
		{[]string{"--security-opt", "apparmor=unconfined"}, "LSM confinement"},
		{[]string{"--security-opt", "systempaths=unconfined"}, "runtime masks"},
		{[]string{"--security-opt", "unmask=ALL"}, "runtime masks"},
		{[]string{"--security-opt", "no-new-privileges=false"}, "only no-new-privileges"},
		{[]string{"--security-opt", "mask=/x"}, "only no-new-privileges"},
		// Item: the user.
		{[]string{"--user", "root"}, "65534:65534"},
		{[]string{"-u", "0"}, "65534:65534"},
		{[]string{"-u0"}, "65534:65534"},
		{[]string{"--user=0:0"}, "65534:65534"},
		{[]string{"--group-add", "0"}, "adds a group"},
		{[]string{"--group-add=keep-groups"}, "adds a group"},
		{[]string{"--userns=host"}, "only auto"},
		{[]string{"--userns", "keep-id"}, "only auto"},
		{[]string{"--userns", "auto:uidmapping=65534:0:1"}, "only auto"},
		{[]string{"--userns", "ns:/proc/1/ns/user"}, "only auto"},
		// Item: /dev/shm and IronVise's limits.
		{[]string{"--shm-size", "10g"}, "caps /dev/shm itself"},
		{[]string{"--shm-size=10g"}, "caps /dev/shm itself"},
		{[]string{"--ulimit", "cpu=unlimited"}, "sets cpu, nofile, nproc, core and msgqueue itself"},
		{[]string{"--ulimit=nofile=1048576"}, "sets cpu, nofile, nproc, core and msgqueue itself"},
		{[]string{"--ulimit", "rtprio=99"}, "sets cpu, nofile, nproc, core and msgqueue itself"},
		{[]string{"--ulimit", "msgqueue=819200"}, "sets cpu, nofile, nproc, core and msgqueue itself"},
		{[]string{"--oom-score-adj", "-1000"}, "only 0 to 1000"},
		{[]string{"--tmpfs", "/workspace"}, "would replace the read-only workspace"},
		{[]string{"--tmpfs", "/workspace/.ssh"}, "would replace the read-only workspace"},
		{[]string{"--tmpfs", "/:rw"}, "would replace the read-only workspace or root"},
		{[]string{"--tmpfs", "/tmp:exec"}, "IronVise's /tmp"},
		{[]string{"--tmpfs", "/dev/shm"}, "IronVise's /dev"},
		{[]string{"--tmpfs=/proc/sys"}, "IronVise's /proc"},
		{[]string{"--tmpfs", "/var/x:rw,exec"}, "option exec"},
		{[]string{"--tmpfs", "/var/x:suid"}, "option suid"},
		{[]string{"--tmpfs", "/var/../tmp"}, "not a clean absolute path"},
		{[]string{"--tmpfs", "var"}, "not a clean absolute path"},
		{[]string{"--tmpfs", "//tmp:exec"}, "not a clean absolute path"},
		{[]string{"--tmpfs", "/var/./x"}, "not a clean absolute path"},
		// Everything else.
		{[]string{"--privileged"}, `"--privileged": not an accepted flag`},
		{[]string{"--network=host"}, `"--network": not an accepted flag`},
		{[]string{"--net", "host"}, `"--net": not an accepted flag`},
		{[]string{"--cap-add", "SYS_ADMIN"}, "not an accepted flag"},
		{[]string{"--pid=host"}, "not an accepted flag"},
		{[]string{"--entrypoint", "/bin/evil"}, "not an accepted flag"},
		{[]string{"--read-only=false"}, "not an accepted flag"},
		{[]string{"--rm=false"}, "not an accepted flag"},
		{[]string{"--memory", "100g"}, "not an accepted flag"},
		{[]string{"-it"}, `"-i": not an accepted flag`},
		{[]string{"--ENV", "FOO=bar"}, `"--ENV": not an accepted flag`},
		{[]string{"runc"}, `"runc": not a flag`},
		{[]string{"FOO=s3cr3t-value"}, "argument 1: not a flag"},
		{[]string{"--", "otherimage", "sh"}, "ends the flags"},
		{[]string{"--runtime"}, "needs a value"},
		{[]string{"--init=yes"}, "takes no value"},
		{[]string{"--label", "a=b", "--privileged"}, "--privileged"},
	}
	for _, tc := range bad {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := checkExtraArgs(tc.args)
			if err == nil || !errors.Is(err, ErrExtraArgs) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want ErrExtraArgs containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t-value") {
				t.Fatalf("the error quotes a value: %v", err)
			}
			if !strings.Contains(err.Error(), "fix: ") {
				t.Fatalf("the error names no fix: %v", err)
			}
		})
	}
}

// TestEveryAcceptedFlagIsDocumented: docs/reference/sandboxing.md lists
// each accepted site flag.
func TestEveryAcceptedFlagIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "reference", "sandboxing.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range ExtraFlagHelp() {
		for _, name := range strings.Split(h[0], ", ") {
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/reference/sandboxing.md does not list %s (%s)", name, h[1])
			}
		}
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
