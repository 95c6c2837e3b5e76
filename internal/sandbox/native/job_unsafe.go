//go:build windows

package native

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobLimits are the Job Object limits of one command.
type jobLimits struct {
	cpuSecs   int
	memMiB    int
	processes int
}

// newJob creates a Job Object that kills every process in it when its last
// handle closes, with the UI restrictions of
// docs/design/sandbox.md#windows-tier and the limits. The caller must close
// the returned handle (which kills the job's processes).
func newJob(l jobLimits) (windows.Handle, []string, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("CreateJobObject: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			windows.CloseHandle(job)
		}
	}()
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	// Security: KILL_ON_JOB_CLOSE guarantees no survivors: when IronVise
	// closes (or loses) the handle, every process of the job dies.
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE |
		windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
	applied := []string{"kill_on_job_close", "die_on_unhandled_exception"}
	if l.cpuSecs > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_TIME
		info.BasicLimitInformation.PerProcessUserTimeLimit = int64(l.cpuSecs) * 10_000_000 // 100 ns units
		applied = append(applied, fmt.Sprintf("process_time=%ds", l.cpuSecs))
	}
	if l.memMiB > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(l.memMiB) << 20
		applied = append(applied, fmt.Sprintf("job_memory=%dMiB", l.memMiB))
	}
	if l.processes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(l.processes)
		applied = append(applied, fmt.Sprintf("active_processes=%d", l.processes))
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return 0, nil, fmt.Errorf("SetInformationJobObject limits: %w", err)
	}
	// Security: no clipboard, desktop, display, exit-windows, global atom,
	// foreign-handle or system-parameter access for the command.
	ui := windows.JOBOBJECT_BASIC_UI_RESTRICTIONS{UIRestrictionsClass: windows.JOB_OBJECT_UILIMIT_DESKTOP |
		windows.JOB_OBJECT_UILIMIT_DISPLAYSETTINGS | windows.JOB_OBJECT_UILIMIT_EXITWINDOWS |
		windows.JOB_OBJECT_UILIMIT_GLOBALATOMS | windows.JOB_OBJECT_UILIMIT_HANDLES |
		windows.JOB_OBJECT_UILIMIT_READCLIPBOARD | windows.JOB_OBJECT_UILIMIT_WRITECLIPBOARD |
		windows.JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectBasicUIRestrictions,
		uintptr(unsafe.Pointer(&ui)), uint32(unsafe.Sizeof(ui))); err != nil {
		return 0, nil, fmt.Errorf("SetInformationJobObject UI restrictions: %w", err)
	}
	applied = append(applied, "ui_restrictions")
	ok = true
	return job, applied, nil
}

// resumeProcess resumes every thread of the suspended process pid (Go's
// os/exec does not expose the primary thread's handle).
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("CreateToolhelp32Snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("OpenThread %d: %w", te.ThreadID, err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("ResumeThread %d: %w", te.ThreadID, err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d to resume", pid)
	}
	return nil
}
