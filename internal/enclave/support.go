package enclave

import "runtime"

// Support is what this build can do of one level, for `sandbox doctor`.
type Support struct {
	Level Level `json:"level"`
	// Name is the level's human name.
	Name string `json:"name"`
	// Supported says whether GUARD_ENCLAVE may select it here.
	Supported bool `json:"supported"`
	// Note says why not, or what it needs.
	Note string `json:"note"`
}

// Supports lists the three enclave levels and whether this build supports
// each on this operating system.
func Supports() []Support {
	soft := Support{Level: LevelSoftware, Name: "Level 1, software-hardened guard worker", Supported: runtime.GOOS == "linux",
		Note: "locks all of the worker's memory (mlockall), makes it non-dumpable and checks its measurement from /proc; needs CAP_IPC_LOCK or an RLIMIT_MEMLOCK above the worker's mapped size (ulimit -l unlimited), and is refused with the reason otherwise"}
	if !soft.Supported {
		soft.Note = "needs Linux (mlockall, PR_SET_DUMPABLE and /proc); this system is " + runtime.GOOS
	}
	// The remote level's worker holds the channel keys and the prompts in
	// clear, so it is hardened as in Level 1 and needs what Level 1 needs.
	rem := Support{Level: LevelRemote, Name: "Level 3, remote hardware enclave (AWS Nitro)", Supported: soft.Supported,
		Note: "needs ECTO_ENCLAVE_REMOTE_URL and the enclave image's PCR0 (ECTO_ENCLAVE_PCR0); the attestation is verified against the pinned AWS Nitro root; its guard worker is hardened as in Level 1 and needs the same memory lock allowance"}
	if !rem.Supported {
		rem.Note = "its guard worker is hardened as in Level 1, which needs Linux; this system is " + runtime.GOOS
	}
	return []Support{
		soft,
		{Level: LevelApple, Name: "Level 2, Apple Hypervisor", Supported: false, Note: "not in this build: driving Hypervisor.framework needs cgo, and IronVise ships without cgo so that one binary cross-compiles"},
		rem,
	}
}
