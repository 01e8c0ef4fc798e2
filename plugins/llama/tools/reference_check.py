#!/usr/bin/env python3
"""CPU check of the llama plugin's math against the fixtures' llama.cpp references.

Runs the forward pass the plugin implements (RMSNorm, q/k/v (+bias), RoPE NORM for llama and
NEOX for qwen2/phi3 over rope.dimension_count dims, causal GQA attention, SwiGLU, tied or
untied LM head) in float64 numpy on the exactly dequantized weights of an F32/Q8_0 GGUF, and
compares the last-position logits (relative L2) and the 24-token greedy continuation with
reference/<model>/. --kv-f16 rounds K and V to FP16 as the plugin's cache does.

  plugins/llama/tools/reference_check.py FIXTURES_DIR MODEL_NAME [--kv-f16] [--max-prompt N]
  e.g. reference_check.py ../shared/fixtures qwen2-tiny-Q8_0 --kv-f16

Measured (llama.cpp d32676d references): llama/phi3/qwen2-tiny-Q8_0, prompts of 1..33 tokens:
exact F32 math 2e-7..7e-7 rel. L2; with FP16 K/V 2e-4..7e-4; greedy identical in every case.
"""
import argparse
import json
import struct

import numpy as np


def read_gguf(path):
    b = open(path,'rb').read(); o = 0
    def rd(fmt):
        nonlocal o; v = struct.unpack_from('<'+fmt, b, o); o += struct.calcsize('<'+fmt); return v[0]
    def rstr():
        nonlocal o; n = rd('Q'); s = b[o:o+n].decode('utf-8','replace'); o += n; return s
    sz = {0:'B',1:'b',2:'H',3:'h',4:'I',5:'i',6:'f',7:'?',10:'Q',11:'q',12:'d'}
    def rval(t):
        if t == 8: return rstr()
        if t == 9:
            at = rd('I'); n = rd('Q'); return [rval(at) for _ in range(n)]
        return rd(sz[t])
    assert b[:4] == b'GGUF'; o = 4; ver = rd('I'); nt = rd('Q'); nkv = rd('Q')
    meta = {}
    for _ in range(nkv):
        k = rstr(); t = rd('I'); meta[k] = rval(t)
    tinfo = []
    for _ in range(nt):
        name = rstr(); nd = rd('I'); ne = [rd('Q') for _ in range(nd)]; ty = rd('I'); off = rd('Q')
        tinfo.append((name, ne, ty, off))
    align = meta.get('general.alignment', 32)
    o = (o + align - 1)//align*align
    T = {}
    for name, ne, ty, off in tinfo:
        n = int(np.prod(ne)); start = o + off
        if ty == 0: a = np.frombuffer(b, np.float32, n, start).astype(np.float64)
        elif ty == 8:
            nb = n//32; raw = np.frombuffer(b, np.uint8, nb*34, start).reshape(nb,34)
            d = raw[:,:2].copy().view(np.float16).astype(np.float64)
            q = raw[:,2:].copy().view(np.int8).astype(np.float64)
            a = (q*d).reshape(-1)
        else:
            raise SystemExit(f'{name}: ggml type {ty} not supported here (F32 and Q8_0 only)')
        T[name] = a.reshape(list(reversed(ne)))
    return meta, T
def fp16(x): return x.astype(np.float16).astype(np.float64)
def rope(x, pos, n_rot, base, neox):  # x [heads, hd]
    x = x.copy(); i = np.arange(n_rot//2); th = pos * base ** (-2.0*i/n_rot)
    c, s = np.cos(th), np.sin(th)
    if neox: a, b_ = i, i + n_rot//2
    else: a, b_ = 2*i, 2*i+1
    x0, x1 = x[:, a].copy(), x[:, b_].copy()
    x[:, a] = x0*c - x1*s; x[:, b_] = x0*s + x1*c
    return x
def forward(meta, T, toks, kvround):
    arch = meta['general.architecture']; A = arch + '.'
    E = meta[A+'embedding_length']; L = meta[A+'block_count']; H = meta[A+'attention.head_count']
    HK = meta.get(A+'attention.head_count_kv', H); HD = meta.get(A+'attention.key_length', E//H)
    FF = meta[A+'feed_forward_length']; eps = meta.get(A+'attention.layer_norm_rms_epsilon', 1e-5)
    base = meta.get(A+'rope.freq_base', 10000.0); nrot = meta.get(A+'rope.dimension_count', HD)
    neox = arch in ('qwen2', 'phi3')
    def rms(x, w): return x / np.sqrt((x*x).mean(-1, keepdims=True) + eps) * w
    x = T['token_embd.weight'][toks]; n = len(toks)
    for l in range(L):
        p = f'blk.{l}.'
        h = rms(x, T[p+'attn_norm.weight'])
        if p+'attn_qkv.weight' in T:
            qkv = h @ T[p+'attn_qkv.weight'].T; q = qkv[:, :H*HD]; k = qkv[:, H*HD:H*HD+HK*HD]; v = qkv[:, H*HD+HK*HD:]
        else:
            q = h @ T[p+'attn_q.weight'].T; k = h @ T[p+'attn_k.weight'].T; v = h @ T[p+'attn_v.weight'].T
            if p+'attn_q.bias' in T: q = q + T[p+'attn_q.bias']; k = k + T[p+'attn_k.bias']; v = v + T[p+'attn_v.bias']
        q = np.stack([rope(q[t].reshape(H, HD), t, nrot, base, neox) for t in range(n)])
        k = np.stack([rope(k[t].reshape(HK, HD), t, nrot, base, neox) for t in range(n)])
        v = v.reshape(n, HK, HD)
        if kvround: k, v = fp16(k), fp16(v)
        att = np.zeros((n, H, HD))
        for hh in range(H):
            kh = hh // (H//HK)
            s = q[:, hh] @ k[:, kh].T / np.sqrt(HD)
            s = s + np.triu(np.full((n, n), -np.inf), 1)
            s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
            att[:, hh] = s @ v[:, kh]
        x = x + att.reshape(n, -1) @ T[p+'attn_output.weight'].T
        h = rms(x, T[p+'ffn_norm.weight'])
        if p+'ffn_gate.weight' in T:
            g = h @ T[p+'ffn_gate.weight'].T; u = h @ T[p+'ffn_up.weight'].T
        else:
            gu = h @ T[p+'ffn_up.weight'].T; g = gu[:, :FF]; u = gu[:, FF:]
        x = x + (g / (1 + np.exp(-g)) * u) @ T[p+'ffn_down.weight'].T
    out = T.get('output.weight'); out = T['token_embd.weight'] if out is None else out
    return rms(x, T['output_norm.weight']) @ out.T
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('fixtures')
    ap.add_argument('model')
    ap.add_argument('--kv-f16', action='store_true')
    ap.add_argument('--max-prompt', type=int, default=40)
    a = ap.parse_args()
    meta, T = read_gguf(f'{a.fixtures}/models/{a.model}.gguf')
    ref = json.load(open(f'{a.fixtures}/reference/{a.model}/reference.json'))
    for pr in ref['prompts']:
        if pr['n_tokens'] > a.max_prompt:
            continue
        toks = pr['tokens']
        lg = forward(meta, T, toks, a.kv_f16)[-1]
        rl = np.fromfile(f'{a.fixtures}/reference/{a.model}/{pr["name"]}.logits.f32', np.float32)
        err = np.linalg.norm(lg - rl) / np.linalg.norm(rl)
        seq, gen = list(toks), []
        for _ in range(len(pr['greedy']['tokens'])):
            nxt = int(np.argmax(forward(meta, T, seq, a.kv_f16)[-1]))
            gen.append(nxt)
            seq.append(nxt)
        g = pr['greedy']['tokens']
        print(a.model, pr['name'], 'rel_l2 %.2e' % err, 'greedy', 'OK' if gen == g else 'DIFF %s vs %s' % (gen[:6], g[:6]))


if __name__ == '__main__':
    main()
