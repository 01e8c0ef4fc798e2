#!/usr/bin/env python3
"""Where the server's stream and `worker-orcd run` part (e2e "utf-8 chinese"): both dump the logits
that generated token STEP is chosen from (server: WORKER_DEBUG_STEP_LOGITS, run: --step-logits-out)
and this prints how they differ and their top candidates.

usage: serve_vs_run.py WORKER_EXE MODEL PLUGIN_DIR PROMPT STEP [N_TOKENS] [extra engine flags...]
Standard library only.
"""
import array
import http.client
import json
import os
import subprocess
import sys
import time

exe, model, plugins, prompt, step = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
n = int(sys.argv[6]) if len(sys.argv) > 6 else 32
extra = sys.argv[7:]
port = 18123
srv_file, run_file = "/tmp/serve_step.f32", "/tmp/run_step.f32"
for f in (srv_file, run_file):
    if os.path.exists(f):
        os.remove(f)

env = dict(os.environ, WORKER_DEBUG_STEP_LOGITS="%d:%s" % (step, srv_file))
srv = subprocess.Popen([exe, "--worker-id", "3f2504e0-4f89-41d3-9a0c-0305e82c3312", "--model", model,
                        "--gpu-device", "0", "--port", str(port), "--plugin-dir", plugins] + extra,
                       env=env, stderr=subprocess.DEVNULL)
try:
    for _ in range(300):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.1)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/execute", body=json.dumps({"job_id": "svr", "prompt": prompt, "temperature": 0,
                                                   "max_tokens": n}),
              headers={"Content-Type": "application/json"})
    body = c.getresponse().read().decode()
    end = [json.loads(l[6:]) for l in body.splitlines() if l.startswith("data: ") and "tokens_out" in l]
    print("server end:", end[0] if end else body[-300:])
finally:
    srv.terminate()
    srv.wait()

out = subprocess.run([exe, "run", "--model", model, "--plugin-dir", plugins, "--prompt", prompt, "--n", str(n),
                      "--step", str(step), "--step-logits-out", run_file, "--json"] + extra,
                     capture_output=True, text=True)
if out.returncode != 0:
    sys.exit("run failed: " + out.stderr[-500:])
print("run ids:", json.loads(out.stdout)["ids"])


def load(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


s, r = load(srv_file), load(run_file)
diff = [i for i in range(len(s)) if s[i] != r[i]]
print("step %d: %d logits, %d differ; max |diff| %.3e" % (
    step, len(s), len(diff), max((abs(s[i] - r[i]) for i in diff), default=0.0)))
for name, v in (("server", s), ("run", r)):
    top = sorted(range(len(v)), key=lambda i: (-v[i], i))[:5]
    print("%-6s top5: %s" % (name, ", ".join("%d=%.9g" % (i, v[i]) for i in top)))
