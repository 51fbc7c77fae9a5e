"""A stand-in for the probe's child: speaks its protocol, then misbehaves on request.

Usage: python fake_child.py MODE PIDFILE SETTINGS.json
"""

import json
import os
import signal
import subprocess
import sys
import time


def emit(event, **fields):
    fields["event"] = event
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


mode, pidfile, settings_path = sys.argv[1], sys.argv[2], sys.argv[3]
with open(settings_path) as handle:
    settings = json.load(handle)
emit("phase", name="import")
emit("part", name="backend", value={"framework": "torch", "device": "cpu", "version": "0"})
emit("phase_done", name="compute", value={"rate": 500.0})
if mode == "noisy":
    print("TensorFlow banner on stdout", flush=True)
    print("[1, 2, 3]", flush=True)
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(pidfile, "w") as handle:
        json.dump({"child": child.pid, "workdir": settings["workdir"]}, handle)
    time.sleep(120)
if mode == "crash":
    with open(pidfile, "w") as handle:
        json.dump({"workdir": settings["workdir"]}, handle)
    sys.stderr.write("Fatal Python error: Segmentation fault\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "malformed":
    emit("part", name="phases", value=5)  # would replace the phases
    emit("part", name="notes", value="not a list")
    emit("phase_done", name="input_warm", value="fast")
    emit("note", text={"not": "text"})
    sys.stdout.write("[" * 100000 + "]" * 100000 + "\n")  # deeper than the stack
    sys.stdout.write('{"event": "part", "name": "x", "value": NaN}\n')
    sys.stdout.write('{"event": "part", "name": "big", "value": ' + "9" * 5000 + "}\n")
    sys.stdout.write("x" * (3 << 20) + "\n")  # a line of 3 MB
    sys.stdout.flush()
    emit("phase_done", name="end_to_end", value={"rate": "many", "input_share": [1]})
    emit("part", name="elapsed_s", value=1.0)
    emit("done", result={"phases": 3, "notes": [1, "kept"]})
    sys.exit(0)
if mode == "sleep":
    with open(pidfile, "w") as handle:
        json.dump({"workdir": settings["workdir"]}, handle)
    time.sleep(120)
if mode == "failed":
    emit("failed", kind="oom", message="out of memory even at batch size 1", result={})
    sys.exit(0)
emit("phase_done", name="end_to_end", value={"rate": 100.0, "input_share": 0.8})
emit("part", name="elapsed_s", value=1.0)
emit("done", result={})
