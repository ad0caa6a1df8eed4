"""Start one SCHED_IDLE busy loop per CPU this process may use and print their PIDs (stop them
with `kill`). With them, no vCPU of a VM ever halts, so a woken thread never waits for the host
to wake its vCPU; any runnable thread of normal priority is meant to take the CPU from them.
Used by the experiment in docs/calibration.md ("idle spinners")."""
import os


def main() -> None:
    pids = []
    for cpu in sorted(os.sched_getaffinity(0)):
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)      # let a caller's $(...) end: no child holds its pipe
            os.dup2(devnull, 2)
            os.sched_setaffinity(0, {cpu})
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            while True:
                pass
        pids.append(pid)
    print(" ".join(map(str, pids)))


if __name__ == "__main__":
    main()
