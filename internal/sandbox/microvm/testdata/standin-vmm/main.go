// Command standin-vmm stands in for Firecracker in the microvm tests, on
// machines where KVM cannot run a guest. It accepts Firecracker's command
// line and configuration file, checks what a real VMM would rely on, and
// "boots" the root filesystem by running its /init — the real IronVise guest
// init, extracted with debugfs — as an ordinary process against the intent
// drive, its stdout standing in for the serial console.
//
// Flags before Firecracker's select a behaviour for the tests:
//
//	standin-vmm [-mode ok|silent|garbage|unframed|truncate|hang|fail|badnonce]
//	            [-record FILE] [-version V] -- <firecracker flags>
//
// A wrapper script passed as ECTO_FC_BINARY supplies them.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type config struct {
	BootSource struct {
		KernelImagePath string `json:"kernel_image_path"`
		BootArgs        string `json:"boot_args"`
	} `json:"boot-source"`
	Drives []struct {
		DriveID      string `json:"drive_id"`
		PathOnHost   string `json:"path_on_host"`
		IsRootDevice bool   `json:"is_root_device"`
		IsReadOnly   bool   `json:"is_read_only"`
	} `json:"drives"`
	MachineConfig struct {
		VCPUCount  int  `json:"vcpu_count"`
		MemSizeMiB int  `json:"mem_size_mib"`
		SMT        bool `json:"smt"`
	} `json:"machine-config"`
	Network []json.RawMessage `json:"network-interfaces"`
}

// record is what the tests inspect afterwards.
type record struct {
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	PID    int      `json:"pid"`
	Config config   `json:"config"`
	Intent []byte   `json:"intent"`
	Files  []string `json:"files"` // the run directory's entries
}

func main() {
	os.Exit(run())
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "standin-vmm: "+format+"\n", args...)
	return 1
}

func run() int {
	own := flag.NewFlagSet("standin-vmm", flag.ContinueOnError)
	mode := own.String("mode", "ok", "behaviour")
	recordPath := own.String("record", "", "write what was received here")
	version := own.String("version", "1.7.0", "the version to report")
	if err := own.Parse(os.Args[1:]); err != nil {
		return 2
	}
	fcArgs := own.Args()

	// Firecracker's own command line.
	fc := flag.NewFlagSet("firecracker", flag.ContinueOnError)
	showVersion := fc.Bool("version", false, "")
	noAPI := fc.Bool("no-api", false, "")
	cfgPath := fc.String("config-file", "", "")
	logPath := fc.String("log-path", "", "")
	fc.String("level", "Info", "")
	fc.String("id", "anonymous-instance", "")
	if err := fc.Parse(fcArgs); err != nil || fc.NArg() > 0 {
		return fail("bad arguments %q", fcArgs)
	}
	if *showVersion {
		fmt.Printf("Firecracker v%s\n\n", *version)
		return 0
	}
	if !*noAPI || *cfgPath == "" {
		return fail("--no-api needs --config-file")
	}
	if *logPath != "" {
		// Firecracker opens the log without creating it.
		if _, err := os.Stat(*logPath); err != nil {
			return fail("log path: %v", err)
		}
	}
	b, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fail("read config: %v", err)
	}
	var cfg config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return fail("config: %v", err)
	}
	rootfs, intent, err := checkConfig(cfg)
	if err != nil {
		return fail("config: %v", err)
	}
	img, err := os.ReadFile(intent)
	if err != nil {
		return fail("intent drive: %v", err)
	}
	if *recordPath != "" {
		entries, _ := os.ReadDir(filepath.Dir(*cfgPath))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		rec := record{Args: os.Args, Env: os.Environ(), PID: os.Getpid(), Config: cfg, Intent: img, Files: names}
		out, _ := json.Marshal(rec)
		if err := os.WriteFile(*recordPath, out, 0o644); err != nil {
			return fail("record: %v", err)
		}
	}

	bootNoise := "[    0.000000] Linux version 6.1.0 (stand-in)\n[    0.012000] Command line: " + cfg.BootSource.BootArgs + "\n[    0.300000] EXT4-fs (vda): mounted filesystem readonly\n"
	switch *mode {
	case "silent":
		return 0
	case "fail":
		return fail("Error creating the virtual machine: Kvm(Error(\"Permission denied\"))")
	case "garbage":
		fmt.Print(bootNoise + "\x00\xff\xfe random bytes ### IRONVISE-RESULT\nKernel panic - not syncing: Attempted to kill init!\n")
		return 0
	case "hang":
		fmt.Print(bootNoise)
		time.Sleep(time.Hour)
		return 0
	case "unframed":
		// What the illustrative shell init of docs/reference/sandboxing.md does: the command's
		// output, raw, on the console.
		fmt.Print(bootNoise)
		out, _ := exec.Command("/bin/sh", "-c", "echo hello from an unframed init").CombinedOutput()
		os.Stdout.Write(out)
		return 0
	}

	guest, cleanup, err := extractInit(rootfs)
	if err != nil {
		return fail("boot: %v", err)
	}
	defer cleanup()
	fmt.Print(bootNoise)
	work, err := os.MkdirTemp("", "standin-guest-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(work)
	_ = os.Chmod(work, 0o1777)
	console := filepath.Join(work, "ttyS0")
	if err := os.WriteFile(console, nil, 0o600); err != nil {
		return fail("%v", err)
	}
	// Like the rootfs's /workspace: empty and not writable for the
	// command; the rest of work stands in for the /tmp tmpfs.
	workspace := filepath.Join(work, "workspace")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		return fail("%v", err)
	}
	cmd := exec.Command(guest, "-intent", intent, "-console", console, "-workdir", workspace, "-scratch", work)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The guest dies with its VMM, as it would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fail("guest init: %v", err)
	}
	serial, err := os.ReadFile(console)
	if err != nil {
		return fail("%v", err)
	}
	switch *mode {
	case "truncate":
		serial = serial[:len(serial)*2/3]
	case "badnonce":
		// A frame for another run, as a replayed console would show.
		serial = bytes.ReplaceAll(serial, []byte(nonceOf(img)), []byte(strings.Repeat("0", 32)))
	}
	// The console as a tty shows it.
	os.Stdout.Write(bytes.ReplaceAll(serial, []byte("\n"), []byte("\r\n")))
	fmt.Print("[    1.100000] reboot: Restarting system\n")
	return 0
}

// checkConfig checks what the tier must always configure and returns the
// root filesystem and the intent drive.
func checkConfig(c config) (rootfs, intent string, err error) {
	if _, err := os.Stat(c.BootSource.KernelImagePath); err != nil {
		return "", "", fmt.Errorf("kernel: %w", err)
	}
	if !strings.Contains(c.BootSource.BootArgs, "console=ttyS0") || !strings.Contains(c.BootSource.BootArgs, "reboot=k") {
		return "", "", fmt.Errorf("boot args %q lack the serial console or reboot=k", c.BootSource.BootArgs)
	}
	if c.MachineConfig.VCPUCount < 1 || c.MachineConfig.MemSizeMiB < 32 {
		return "", "", errors.New("machine-config out of range")
	}
	if len(c.Network) != 0 {
		return "", "", errors.New("the VM has a network interface")
	}
	if len(c.Drives) != 2 || !c.Drives[0].IsRootDevice || c.Drives[1].IsRootDevice {
		return "", "", errors.New("want the root drive (vda) then the intent drive (vdb)")
	}
	for _, d := range c.Drives {
		if !d.IsReadOnly {
			return "", "", fmt.Errorf("drive %s is writable", d.DriveID)
		}
		if _, err := os.Stat(d.PathOnHost); err != nil {
			return "", "", fmt.Errorf("drive %s: %w", d.DriveID, err)
		}
	}
	fi, _ := os.Stat(c.Drives[1].PathOnHost)
	if fi.Size()%512 != 0 {
		return "", "", fmt.Errorf("the intent drive is %d bytes, not whole sectors", fi.Size())
	}
	return c.Drives[0].PathOnHost, c.Drives[1].PathOnHost, nil
}

// extractInit copies /init out of the ext4 root filesystem.
func extractInit(rootfs string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "standin-init-")
	if err != nil {
		return "", nil, err
	}
	_ = os.Chmod(dir, 0o755)
	cleanup := func() { os.RemoveAll(dir) }
	out := filepath.Join(dir, "init")
	if msg, err := exec.Command("debugfs", "-R", "dump /init "+out, rootfs).CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("debugfs: %v %s", err, msg)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		cleanup()
		return "", nil, fmt.Errorf("the root filesystem has no /init")
	}
	if err := os.Chmod(out, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	return out, cleanup, nil
}

func nonceOf(img []byte) string {
	var in struct {
		IronVise struct {
			Nonce string `json:"nonce"`
		} `json:"ironvise"`
	}
	_ = json.Unmarshal(bytes.TrimRight(img, "\x00"), &in)
	return in.IronVise.Nonce
}
