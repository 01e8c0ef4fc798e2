#!/usr/bin/env python3
"""End-to-end checks of the real worker on a GPU (generation issue): reproducibility, UTF-8
streaming, cancel latency, VRAM_OOM recovery, VRAM steadiness over 100 jobs.

usage: e2e_http.py WORKER_EXE MODEL PLUGIN_DIR [PORT]
Prints one line per check and exits non-zero when any fails. Standard library only (torch is used,
when present, to hold VRAM for the forced out-of-memory job).
"""
import http.client
import json
import re
import subprocess
import sys
import threading
import time
import uuid

exe, model, plugins = sys.argv[1], sys.argv[2], sys.argv[3]
port = int(sys.argv[4]) if len(sys.argv) > 4 else 18080
failures = []
KV_MB = "64"  # the server's --kv-cache-size-mb; `run` gets the same


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)
    if not ok:
        failures.append(name)


def request(method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read().decode()


def execute(body, on_token=None):
    """POST /execute; returns (events list of (event, data, t_received))."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/execute", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        return [("http", {"status": r.status, "body": r.read().decode()}, time.time())]
    events, ev = [], None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode("utf-8").rstrip("\r\n")
        if line.startswith("event: "):
            ev = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
            events.append((ev, data, time.time()))
            if ev == "token" and on_token:
                on_token(len([e for e in events if e[0] == "token"]), data)
            if ev in ("end", "error"):
                break
    return events


def text_of(events):
    return "".join(d["t"] for e, d, _ in events if e == "token")


def terminal(events):
    return [e for e in events if e[0] in ("end", "error")]


proc = subprocess.Popen([exe, "--worker-id", str(uuid.uuid4()), "--model", model, "--gpu-device", "0",
                         "--port", str(port), "--plugin-dir", plugins, "--kv-cache-size-mb", KV_MB],
                        stderr=open("/tmp/worker.log", "w"))
try:
    for _ in range(600):
        try:
            st, body = request("GET", "/health", timeout=2)
            if st == 200 and json.loads(body).get("state") == "ready":
                break
        except OSError:
            pass
        time.sleep(0.1)
    st, body = request("GET", "/health")
    health = json.loads(body)
    print("health:", json.dumps(health))
    check("worker ready", st == 200 and health.get("state") == "ready")
    vram_loaded = health.get("vram_bytes_used")

    haiku = "Write a haiku about GPU computing"
    a = execute({"job_id": "h1", "prompt": haiku, "temperature": 0, "seed": 42, "max_tokens": 48})
    b = execute({"job_id": "h2", "prompt": haiku, "temperature": 0, "seed": 42, "max_tokens": 48})
    check("haiku temperature 0 seed 42 twice: identical", text_of(a) == text_of(b) and len(terminal(a)) == 1,
          repr(text_of(a))[:120] + " | end " + json.dumps(terminal(a)[0][1]))
    a = execute({"job_id": "h3", "prompt": haiku, "temperature": 0.7, "seed": 42, "max_tokens": 48})
    b = execute({"job_id": "h4", "prompt": haiku, "temperature": 0.7, "seed": 42, "max_tokens": 48})
    check("haiku temperature 0.7 seed 42 twice: identical", text_of(a) == text_of(b), repr(text_of(a))[:120])
    c = execute({"job_id": "h5", "prompt": haiku, "temperature": 0.7, "seed": 43, "max_tokens": 48})
    check("different seeds: different streams", text_of(a) != text_of(c), repr(text_of(c))[:120])

    for name, prompt in [("chinese", "用中文写一首关于显卡的诗"), ("emoji", "GPU 🚀🔥 go 🎉"),
                         ("mixed", "Ünïcödé مرحبا שלום Привет 日本語 🤖")]:
        ev = execute({"job_id": "u-" + name, "prompt": prompt, "temperature": 0, "max_tokens": 32})
        pieces = [d["t"] for e, d, _ in ev if e == "token"]
        valid = all(isinstance(p, str) and p.encode("utf-8").decode("utf-8") == p for p in pieces)
        # the whole-sequence decode of the same greedy ids, from the CLI
        # `run` with the server's engine options (the KV cache size sets the context, hence the
        # scratch and workspace sizes the kernels are planned with): the same bits, the same ids.
        out = subprocess.run([exe, "run", "--model", model, "--plugin-dir", plugins, "--prompt", prompt, "--n", "32",
                              "--kv-cache-size-mb", KV_MB, "--json"], capture_output=True, text=True)
        ids = json.loads(out.stdout)["ids"] if out.returncode == 0 else []
        end = terminal(ev)[0][1] if terminal(ev) else {}
        n_out = end.get("tokens_out", 0)
        det = subprocess.run([exe, "tokenize", "--model", model, "--plugin-dir", plugins, "--detokenize",
                              ",".join(map(str, ids[:n_out]))], capture_output=True).stdout.decode("utf-8", errors="replace")
        whole = det[:-1] if det.endswith("\n") else det
        stream = "".join(pieces)
        # `tokenize --detokenize` renders a SentencePiece sequence as a prompt (its first "▁" is
        # the added prefix space and is dropped); in a continuation that space is real text.
        # Invalid byte runs (a random tiny model emits some) become U+FFFD on both sides, but Python
        # writes one per byte and the worker one per run: compare with runs collapsed.
        stream, whole = re.sub("\ufffd+", "\ufffd", stream), re.sub("\ufffd+", "\ufffd", whole)
        same = stream == whole or (stream.startswith(" ") and stream[1:] == whole)
        check("utf-8 " + name + ": valid pieces, concatenation == whole decode", valid and same,
              "%d pieces, %d tokens; stream %r...%r vs decode %r...%r" % (
                  len(pieces), n_out, stream[:40], stream[-40:], whole[:40], whole[-40:]))
        if not same:  # where do they part? each `run` id detokenized alone, next to the stream's piece
            # (by the event's token index `i`: a token held back inside a UTF-8 character has no event)
            by_index = {d["i"]: d["t"] for e, d, _ in ev if e == "token"}
            for i, tid in enumerate(ids[:n_out]):
                if i not in by_index:
                    continue
                one = subprocess.run([exe, "tokenize", "--model", model, "--plugin-dir", plugins, "--detokenize",
                                      str(tid)], capture_output=True).stdout.decode("utf-8", errors="replace")
                one = one[:-1] if one.endswith("\n") else one
                if by_index[i].lstrip(" ") != one.lstrip(" ").lstrip("\u2581"):
                    print("  first difference at token %d: run id %d = %r, stream piece %r; run ids %s" % (
                        i, tid, one, by_index[i], ids[max(0, i - 3):i + 4]))
                    break

    # cancel mid-stream: time from the /cancel request to the terminal event
    marks = {}

    def cancel_after(n, _):
        if n == 5 and "sent" not in marks:
            def go():
                marks["sent"] = time.time()
                request("POST", "/cancel", {"job_id": "c1"})
            threading.Thread(target=go).start()

    ev = execute({"job_id": "c1", "prompt": haiku, "temperature": 0.7, "max_tokens": 2048}, cancel_after)
    term = terminal(ev)
    lat = (term[0][2] - marks["sent"]) * 1000 if term and "sent" in marks else -1
    check("cancel mid-stream -> CANCELLED within 100 ms",
          len(term) == 1 and term[0][0] == "error" and term[0][1].get("code") == "CANCELLED" and 0 <= lat <= 100,
          "%.1f ms, terminal %s" % (lat, json.dumps(term[0][1]) if term else "none"))

    # forced VRAM_OOM: hold (almost) all free VRAM from another process, run a job, release.
    try:
        hog = subprocess.Popen([sys.executable, "-c", """
import torch, sys, time
held = []
chunk = 1 << 30
while chunk >= (1 << 20):
    try:
        held.append(torch.empty(chunk, dtype=torch.uint8, device='cuda'))
    except RuntimeError:
        chunk //= 2
print('held', sum(t.numel() for t in held), flush=True)
sys.stdin.readline()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print("hog:", hog.stdout.readline().strip())
        ev = execute({"job_id": "oom", "prompt": haiku * 20, "temperature": 0, "max_tokens": 1024})
        term = terminal(ev)
        hog.stdin.write("\n")
        hog.stdin.flush()
        hog.wait()
        # The worker reserves its KV cache and scratch at startup, so a job normally needs no new
        # VRAM and ends normally; if it does need some (a larger prefill workspace), it must fail
        # alone with VRAM_OOM. Anything else (a crash, another error code) fails the check.
        ok = len(term) == 1 and (term[0][0] == "end" or
                                 (term[0][0] == "error" and term[0][1].get("code") == "VRAM_OOM"))
        check("job with all free VRAM held elsewhere: ends (memory reserved at startup) or fails alone with VRAM_OOM",
              ok, (term[0][0] + " " + json.dumps(term[0][1])[:200]) if term else json.dumps(ev[-1:]))
        st, body = request("GET", "/health")
        ev = execute({"job_id": "after-oom", "prompt": haiku, "temperature": 0, "max_tokens": 16})
        check("health serving and the next job succeeds after VRAM_OOM",
              st == 200 and json.loads(body)["status"] == "healthy" and terminal(ev) and terminal(ev)[0][0] == "end")
    except Exception as e:  # noqa: BLE001
        check("forced VRAM_OOM", False, repr(e))

    def gpu_used():
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout
        return [l for l in out.splitlines() if l.split(",")[0].strip() == str(proc.pid)]
    print("nvidia-smi before 100 jobs:", gpu_used())
    st, body = request("GET", "/health")
    vram_loaded = json.loads(body).get("vram_bytes_used")
    for i in range(100):
        execute({"job_id": "seq-%d" % i, "prompt": haiku, "temperature": 0.8, "seed": i, "max_tokens": 16})
    print("nvidia-smi after 100 jobs:", gpu_used())
    st, body = request("GET", "/health")
    vram_after = json.loads(body).get("vram_bytes_used")
    check("100 sequential jobs leave VRAM at its post-load value", vram_after == vram_loaded,
          "%s -> %s bytes" % (vram_loaded, vram_after))
    st, metrics = request("GET", "/metrics")
    print("\n".join(l for l in metrics.splitlines() if l.startswith("worker_vram_bytes") or l.startswith("worker_requests_total")))
    request("POST", "/shutdown", {})
    proc.wait(timeout=30)
    check("shutdown exits 0", proc.returncode == 0, str(proc.returncode))
finally:
    if proc.poll() is None:
        proc.kill()
print("e2e: %d failed" % len(failures))
sys.exit(1 if failures else 0)
