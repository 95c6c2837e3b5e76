package config

import (
	"testing"
)

func TestSandboxDefaultsAndOverrides(t *testing.T) {
	c := mustLoad(t, "HOME", "/h")
	s := c.Sandbox
	if s.TimeoutSecs != 30 || s.CPUSecs != 30 || s.MemMiB != 512 || s.NoFile != 64 || s.ScratchMiB != 256 || s.User != "" || s.DockerImage != "" || s.FCBinary != "" || s.ContainerMode {
		t.Fatalf("defaults: %+v", s)
	}
	c = mustLoad(t,
		"HOME", "/h", "ECTO_SANDBOX_TIMEOUT_SECS", "5", "ECTO_SANDBOX_CPU_SECS", "2", "ECTO_SANDBOX_MEM_MIB", "2048",
		"ECTO_SANDBOX_NOFILE", "256", "ECTO_SANDBOX_USER", "nobody", "ECTO_DOCKER_IMAGE", "alpine:3.19",
		"ECTO_FC_BINARY", "/usr/local/bin/firecracker", "ECTO_SANDBOX_TIER", "Docker", "ECTO_SANDBOX_SCRATCH_MIB", "1024",
		"ECTO_SANDBOX_CONTAINER_MODE", "true",
	)
	s = c.Sandbox
	if s.TimeoutSecs != 5 || s.CPUSecs != 2 || s.MemMiB != 2048 || s.NoFile != 256 || s.ScratchMiB != 1024 || s.User != "nobody" ||
		s.DockerImage != "alpine:3.19" || s.FCBinary != "/usr/local/bin/firecracker" || s.Tier != "docker" || !s.ContainerMode {
		t.Fatalf("overrides: %+v", s)
	}
}

func TestSandboxRejectsMalformedValues(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"ECTO_SANDBOX_TIMEOUT_SECS", "0", `ECTO_SANDBOX_TIMEOUT_SECS="0": not an integer in range (accepted: 1 to 86400)`},
		{"ECTO_SANDBOX_TIMEOUT_SECS", "30s", `ECTO_SANDBOX_TIMEOUT_SECS="30s"`},
		{"ECTO_SANDBOX_CPU_SECS", "-1", `ECTO_SANDBOX_CPU_SECS="-1"`},
		{"ECTO_SANDBOX_MEM_MIB", "8", `ECTO_SANDBOX_MEM_MIB="8": not an integer in range (accepted: 16 to 1048576)`},
		{"ECTO_SANDBOX_MEM_MIB", "512M", `ECTO_SANDBOX_MEM_MIB="512M"`},
		{"ECTO_SANDBOX_NOFILE", "2", `ECTO_SANDBOX_NOFILE="2"`},
		{"ECTO_FC_BINARY", "firecracker", `ECTO_FC_BINARY="firecracker": not an absolute path`},
		{"ECTO_SANDBOX_SCRATCH_MIB", "0", `ECTO_SANDBOX_SCRATCH_MIB="0": not an integer in range (accepted: 1 to 65536)`},
		{"ECTO_SANDBOX_SCRATCH_MIB", "-5", `ECTO_SANDBOX_SCRATCH_MIB="-5": not an integer in range (accepted: 1 to 65536)`},
		{"ECTO_SANDBOX_SCRATCH_MIB", "65537", `ECTO_SANDBOX_SCRATCH_MIB="65537": not an integer in range (accepted: 1 to 65536)`},
		{"ECTO_SANDBOX_SCRATCH_MIB", "256M", `ECTO_SANDBOX_SCRATCH_MIB="256M"`},
		{"ECTO_SANDBOX_SCRATCH_MIB", "1.5", `ECTO_SANDBOX_SCRATCH_MIB="1.5"`},
		{"ECTO_SANDBOX_CONTAINER_MODE", "yes", `ECTO_SANDBOX_CONTAINER_MODE="yes"`},
		{"ECTO_SANDBOX_CONTAINER_MODE", "1", `ECTO_SANDBOX_CONTAINER_MODE="1"`},
		{"ECTO_SANDBOX_CONTAINER_MODE", "True", `ECTO_SANDBOX_CONTAINER_MODE="True"`},
		{"ECTO_SANDBOX_CONTAINER_MODE", " true", `ECTO_SANDBOX_CONTAINER_MODE=" true"`},
		{"ECTO_SANDBOX_SCRATCH_MIB", "99999999999999999999", `ECTO_SANDBOX_SCRATCH_MIB="99999999999999999999"`},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			wantRejected(t, tc.name, tc.value, tc.want)
		})
	}
}

func TestSandboxScratchBounds(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
	}{{"1", 1}, {"256", 256}, {"65536", 65536}, {"", 256}} {
		t.Run(tc.value, func(t *testing.T) {
			c := mustLoad(t, "HOME", "/h", "ECTO_SANDBOX_SCRATCH_MIB", tc.value)
			if got := c.Sandbox.ScratchMiB; got != tc.want {
				t.Fatalf("ScratchMiB = %d; want %d", got, tc.want)
			}
		})
	}
}
