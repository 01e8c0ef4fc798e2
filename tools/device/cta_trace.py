#!/usr/bin/env python3
"""Reads the per-CTA records of a trace build (cmake -DWORKER_CTA_TRACE=ON) that bench wrote with
WORKER_CTA_TRACE_OUT=dir (`bench ... --timeline N`), and prints where a decode step's time goes
between and inside the kernels that overlap under PDL.

usage: tools/device/cta_trace.py dir/*.bin

Layout (sdk/include/worker/cta_trace.cuh): 8 bytes (records ever written), then the ring of 64-byte
records {kind << 24 | info, smid << 24 | block, t_entry, t_wait_returned, t_exit, mark[4]} (ns).
Kinds: 1 decode attention (info: head_dim), 2 int8x GEMV (info: rows), 3 unit GEMV, 4 unit SwiGLU.
Marks: attention 0 new K/V row written, 1 queries staged, 2 last tile done, 3 every split state
polled (split 0 of a split query); GEMVs 1 x staged; int8x GEMV 2 warp 0's first dot summed, 3 its
row stored; unit GEMVs 0 thread 0's rows stored (tiled grids), 2 the problem done (the last cp.async
waited for), 3 every warp's dots done (tiled grids).

Output:
- per kernel after kernel (the chain as launched, a launch = one kind and info, split where entries
  are 4 us apart): CTA count and entry / wait-return / exit (first, median, last) in us after the
  previous traced launch's last exit. Entry before 0: the CTA was resident while its predecessor
  ran (PDL); entry after 0: it waited for room on an SM.
- per split decode attention launch: the other splits' exits, split 0's own wait return and keys
  done, when it saw every state, and which block (z, in dispatch order) finished last.
- marks per kernel class, us after each CTA's own wait return.
"""
import statistics as st
import struct
import sys

KIND = {1: 'attn', 2: 'int8x', 3: 'unit', 4: 'unit-swiglu'}
REC = struct.Struct('<IIQQQQQQQ')
KEEP = 400000  # newest records read per ring


def read(paths):
    recs = []
    for path in paths:
        with open(path, 'rb') as f:
            n = struct.unpack('<Q', f.read(8))[0]
            data = f.read()
        cap = len(data) // REC.size
        keep = min(n, cap, KEEP)
        for k in range(keep):
            a, b, t0, t1, t2, m0, m1, m2, m3 = REC.unpack_from(data, REC.size * ((n - keep + k) % cap))
            recs.append({'kind': a >> 24, 'info': a & 0xffffff, 'sm': b >> 24, 'blk': b & 0xffffff,
                         't0': t0, 't1': t1, 't2': t2, 'm': (m0, m1, m2, m3)})
    return recs


def launches_of(recs):
    streams = {}
    for r in recs:
        streams.setdefault((r['kind'], r['info']), []).append(r)
    out = []
    for key, rs in streams.items():
        rs.sort(key=lambda r: r['t0'])
        cur = [rs[0]]
        for r in rs[1:]:
            if r['t0'] - cur[-1]['t0'] > 4000:
                out.append((key, cur))
                cur = [r]
            else:
                cur.append(r)
        out.append((key, cur))
    out.sort(key=lambda l: min(r['t0'] for r in l[1]))
    return out


def name(key):
    return '%s[%d]' % (KIND.get(key[0], str(key[0])), key[1])


def fml(v):  # first, median, last
    v = sorted(v)
    return (v[0], v[len(v) // 2], v[-1]) if v else (0, 0, 0)


def chain(launches):
    rows, prev_end, prev = {}, None, None
    for key, rs in launches:
        if prev_end is not None:
            us = lambda t: (t - prev_end) / 1000.0
            row = (len(rs),) + tuple(us(t) for t in fml([r['t0'] for r in rs])) + \
                tuple(us(t) for t in fml([r['t1'] for r in rs if r['t1']])) + \
                tuple(us(t) for t in fml([r['t2'] for r in rs]))
            rows.setdefault((prev, name(key)), []).append(row)
        prev_end, prev = max(r['t2'] for r in rs), name(key)
    print('kernel after kernel: n, entry / wait-return / exit (first median last), us after the previous '
          'traced launch\'s last exit; medians over launches')
    for (pn, nm), rr in sorted(rows.items(), key=lambda kv: -len(kv[1])):
        if len(rr) < 8:
            continue
        med = [st.median(c) for c in zip(*rr)]
        print('  %-18s -> %-18s x%4d  n=%4.0f  entry %6.2f %6.2f %6.2f  wait %6.2f %6.2f %6.2f  '
              'exit %6.2f %6.2f %6.2f' % ((pn, nm, len(rr)) + tuple(med)))


def merges(launches):
    heads, by_z, last_z = [], {}, {}
    for key, rs in launches:
        if key[0] != 1:
            continue
        mergers = [r for r in rs if r['m'][3]]
        if not mergers:
            continue
        gy = len(mergers)  # one merging block per head row: the grid's y extent
        w = sorted(r['t1'] for r in rs if r['t1'])[len(rs) // 2]
        us = lambda t: (t - w) / 1000.0
        per_head = {}
        for r in rs:
            if not r['m'][3]:
                by_z.setdefault(r['blk'] // gy, []).append(us(r['t2']))
            per_head.setdefault(r['blk'] % gy, []).append(r)
        for h, hs in per_head.items():
            m = [r for r in hs if r['m'][3]]
            others = sorted(r['t2'] for r in hs if not r['m'][3])
            if len(m) != 1 or not others:
                continue
            m = m[0]
            heads.append((len(others), us(others[len(others) // 2]), us(others[-1]), us(m['t1']),
                          us(m['m'][2]) if m['m'][2] else float('nan'), us(m['m'][3]), us(m['t2']),
                          (m['m'][3] - others[-1]) / 1000.0))
            z = max((r['t2'], r['blk'] // gy) for r in hs if not r['m'][3])[1]
            last_z[z] = last_z.get(z, 0) + 1
    if not heads:
        return
    print('split decode attention, %d heads: us after the launch\'s median wait return (medians)' % len(heads))
    print('  %.0f other splits: exit median %.2f, last %.2f; split 0: wait returned %.2f, own keys done '
          '%.2f, saw every state at %.2f, exit %.2f; seen - last other exit %.2f'
          % tuple(st.median(c) for c in zip(*heads)))
    meds = sorted(((st.median(v), z) for z, v in by_z.items()), reverse=True)
    print('  exit by block z (dispatch order), slowest: ' + ' '.join('z%d %.2f' % (z, t) for t, z in meds[:6]) +
          '; fastest: ' + ' '.join('z%d %.2f' % (z, t) for t, z in meds[-3:]))
    print('  last block per head: ' + ' '.join('z%d x%d' % kv for kv in sorted(last_z.items(), key=lambda kv: -kv[1])[:6]))


def marks(launches):
    cls = {}
    for key, rs in launches:
        for r in rs:
            if not r['t1']:
                continue
            d = cls.setdefault(name(key), [[], [], [], [], []])
            for i, mv in enumerate(r['m']):
                if mv:
                    d[i].append((mv - r['t1']) / 1000.0)
            d[4].append((r['t2'] - r['t1']) / 1000.0)
    print('marks: us after each CTA\'s own wait return (median over the CTAs that set them, count)')
    for nm, d in sorted(cls.items()):
        print('  %-18s ' % nm + '  '.join('m%d %s' % (i, ('%.2f (%d)' % (st.median(v), len(v))) if v else '-')
                                         for i, v in enumerate(d[:4])) + '  exit %.2f' % st.median(d[4]))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    recs = read(sys.argv[1:])
    print('records', len(recs))
    launches = launches_of(recs)
    chain(launches)
    merges(launches)
    marks(launches)


if __name__ == '__main__':
    main()
