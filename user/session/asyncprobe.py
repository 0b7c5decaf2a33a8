# SPDX-License-Identifier: BSD-2-Clause
# The layout probe of user/session/asyncprobe.c, run as `python -I -S -c <this>` in
# the profiled program's own interpreter binary.  It makes C _asyncio.Task,
# _asyncio.Future and async_generator_asend objects whose fields it knows
# (their loop, coroutine, name, awaited future, state, generator), reads each
# object's own bytes through ctypes and prints where those values lie, as
# one line of key=value words.  An offset counts only when it holds the
# expected value in every one of several independently made objects, and
# only when exactly one offset does; anything else is printed as "none".
# Reads stay inside each object (type(obj).__basicsize__ bytes).
import sys

NONE = 'none'
N = 3  # independently made objects per question
out = {}


def note(msg):
    sys.stderr.write('asyncprobe: %s\n' % msg)


def words(obj, size, width):
    import ctypes
    ctype = ctypes.c_uint64 if width == 8 else ctypes.c_uint32
    n = size // width
    return list((ctype * n).from_address(id(obj)))


def tp_name(t):
    # The C string itself: tp_name is the first field after the variable
    # object header, whose size is object's plus ob_size, checked on int,
    # whose name is known.  (Not against tuple's size: 3.14's tuple keeps its
    # hash after that header.)
    import ctypes
    w = ctypes.sizeof(ctypes.c_void_p)
    hdr = object.__basicsize__ + w
    if ctypes.c_char_p.from_address(id(int) + hdr).value != b'int':
        return NONE
    name = ctypes.c_char_p.from_address(id(t) + hdr).value
    if not name:
        return NONE
    name = name.decode('ascii', 'replace')
    ok = name.replace('.', '').replace('_', '').isalnum() and len(name) < 64
    if not ok or name.rsplit('.', 1)[-1] != t.__name__:
        return NONE
    return name


def only(offsets, what):
    # The one offset that matched everywhere; several or none: not found.
    if len(offsets) == 1:
        return offsets[0]
    note('%s: %s' % (what, 'not found' if not offsets else
                     'ambiguous (%s)' % ','.join(map(str, offsets))))
    return NONE


def find_ptr(objs, wants, size, what):
    # objs[i] holds id(wants[i]) at the offset, for every i.
    import ctypes
    w = ctypes.sizeof(ctypes.c_void_p)
    found = None
    for obj, want in zip(objs, wants):
        hit = {i * w for i, v in enumerate(words(obj, size, w)) if v == id(want)}
        found = hit if found is None else found & hit
    return only(sorted(found or ()), what)


def step(loop):
    # Runs what is ready now, once.
    loop.call_soon(loop.stop)
    loop.run_forever()


async def returns():
    return 1


async def waits(fut):
    await fut


def guarded(what, fn, *args):
    # One part failing leaves the others' answers standing.
    try:
        fn(*args)
    except Exception as e:
        note('%s: %r' % (what, e))


def task_layout(C, asyncio):
    size = C.Task.__basicsize__
    out['task_size'] = size
    loops = [asyncio.new_event_loop() for _ in range(N)]
    guarded('fut_loop, task_coro, task_name', pointers, C, loops, size)
    guarded('task_fut_waiter', waiter, C, loops, size)
    guarded('task_name', name_format, C, loops[0], out['task_name'])
    guarded('fut_state', state_layout, C, loops, size)
    if sys.version_info >= (3, 14):
        guarded('task_node', task_node, C, loops[0], size)
    for lp in loops:
        lp.close()


def pointers(C, loops, size):
    coros = [returns() for _ in range(N)]
    names = ['probe-%d-%x' % (i, id(loops[i])) for i in range(N)]
    tasks = [C.Task(coros[i], loop=loops[i], name=names[i]) for i in range(N)]
    out['fut_loop'] = find_ptr(tasks, loops, size, 'fut_loop')
    out['task_coro'] = find_ptr(tasks, coros, size, 'task_coro')
    out['task_name'] = find_ptr(tasks, names, size, 'task_name')
    for lp in loops:
        step(lp)


def task_node(C, loop, size):
    # 3.14+: a C task is linked into its thread's list when it is made (a
    # struct llist_node {next, prev}); tasks made one after the other point
    # at each other's nodes.
    import ctypes
    w = ctypes.sizeof(ctypes.c_void_p)
    futs = [loop.create_future() for _ in range(N)]
    tasks = [C.Task(waits(f), loop=loop) for f in futs]
    mem = [words(t, size, w) for t in tasks]
    hits = [k * w for k in range(size // w - 1)
            if all(mem[i][k] == id(tasks[i + 1]) + k * w and
                   mem[i + 1][k + 1] == id(tasks[i]) + k * w for i in range(N - 1))]
    out['task_node'] = only(hits, 'task_node')
    for f in futs:
        f.set_result(None)
    step(loop)
    step(loop)


def waiter(C, loops, size):
    # Each task runs one step and then waits on its own future.
    futs = [lp.create_future() for lp in loops]
    waiting = [C.Task(waits(futs[i]), loop=loops[i]) for i in range(N)]
    for lp in loops:
        step(lp)
    if all(not t.done() for t in waiting):
        out['task_fut_waiter'] = find_ptr(waiting, futs, size, 'task_fut_waiter')
    else:
        note('task_fut_waiter: the tasks did not wait')
    for f in futs:
        f.set_result(None)
    for lp in loops:
        step(lp)


def name_format(C, loop, off):
    # 3.13 keeps an unnamed task's counter as an int until get_name().
    import ctypes
    if off == NONE:
        return
    t = C.Task(returns(), loop=loop)
    addr = ctypes.c_void_p.from_address(id(t) + off).value
    held = ctypes.cast(addr, ctypes.py_object).value
    name = t.get_name()
    if type(held) is int:
        digits = str(held)
        if name.endswith(digits) and name[:-len(digits)] == 'Task-':
            out['name_may_be_int'] = 1
            out['name_int_prefix'] = 'Task-'
        else:
            note('task_name: an int %d for the name %r' % (held, name))
            out['task_name'] = NONE
    elif type(held) is not str or held != name:
        note('task_name: the slot does not hold the name of an unnamed task')
        out['task_name'] = NONE
    step(loop)


def state_layout(C, loops, size):
    # fut_state: the one 4-byte word that reads the same in every pending,
    # every cancelled and every finished task and future, three different
    # values, in both kinds of object (a Task starts with a Future's fields).
    fsize = C.Future.__basicsize__
    groups = []
    for lp in loops:
        canc = C.Task(returns(), loop=lp)
        fini = C.Task(returns(), loop=lp)
        canc.cancel()
        step(lp)
        pend = C.Task(returns(), loop=lp)
        if not (canc.cancelled() and fini.done() and not fini.cancelled()
                and not pend.done()):
            note('fut_state: the tasks did not reach their states')
            return
        # Read now: the loop's next step would run pend.
        groups.append([words(o, size, 4) for o in (pend, canc, fini)])
        fp, fc, ff = C.Future(loop=lp), C.Future(loop=lp), C.Future(loop=lp)
        fc.cancel()
        ff.set_result(1)
        groups.append([words(o, fsize, 4) for o in (fp, fc, ff)])
        step(lp)
    cands = None
    for vals in groups:
        here = {}
        for i in range(len(vals[0])):
            trio = (vals[0][i], vals[1][i], vals[2][i])
            if len(set(trio)) == 3:
                here[i * 4] = trio
        if cands is None:
            cands = here
        else:
            cands = {o: v for o, v in cands.items() if here.get(o) == v}
    off = only(sorted(cands or ()), 'fut_state')
    if off != NONE:
        out['fut_state'] = off
        signed = [v - (1 << 32) if v >= 1 << 31 else v for v in cands[off]]
        out['state_pending'], out['state_cancelled'], out['state_finished'] = signed


def asend_layout():
    async def agen():
        yield 1

    gens = [agen() for _ in range(N)]
    sends = [g.__anext__() for g in gens]
    if type(sends[0]).__name__ != 'async_generator_asend':
        note('asend_gen: __anext__() made a %s' % type(sends[0]).__name__)
        return
    size = type(sends[0]).__basicsize__
    out['asend_size'] = size
    out['asend_gen'] = find_ptr(sends, gens, size, 'asend_gen')
    for s in sends:
        s.close()


class _Attrs:
    pass


def dict_keys_layout():
    # 3.9 and 3.10 keep PyDictKeysObject private.  Its address: the word of
    # an instance's __dict__ that two instances of one class share (their
    # split tables share one keys object) and that is neither the type nor
    # a small number.  Its layout: in combined dicts of known keys and
    # values, where the keys', the values' and the counts' words lie.
    import ctypes
    w = ctypes.sizeof(ctypes.c_void_p)
    a, b = _Attrs(), _Attrs()
    for o in (a, b):
        o.x0, o.x1, o.x2 = 1, 2, 3
    da, db = words(a.__dict__, dict.__basicsize__, w), words(b.__dict__, dict.__basicsize__, w)
    shared = [i * w for i in range(len(da))
              if da[i] == db[i] and da[i] != id(dict) and da[i] > 1 << 20]
    ma_keys = only(shared, 'dk: ma_keys')
    if ma_keys == NONE:
        return
    found = None
    for n in (5, 10, 20):
        ks = ['dkprobe_%d_%d' % (n, i) for i in range(n)]
        vs = [object() for _ in range(n)]
        d = dict(zip(ks, vs))
        keys = ctypes.c_void_p.from_address(id(d) + ma_keys).value
        size = sys.getsizeof(d) - dict.__basicsize__
        if size <= 0 or size > 1 << 16:
            note('dk: a keys object of %d bytes' % size)
            return
        kw = list((ctypes.c_uint64 * (size // w)).from_address(keys))
        pos = {v: i * w for i, v in enumerate(kw)}
        if any(id(k) not in pos or id(v) not in pos for k, v in zip(ks, vs)):
            note('dk: the entries were not found')
            return
        k0, k1, v0 = pos[id(ks[0])], pos[id(ks[1])], pos[id(vs[0])]
        esize = k1 - k0
        h0 = hash(ks[0]) & ((1 << 64) - 1)
        hpos = [i * w for i, v in enumerate(kw) if v == h0]
        start = min([k0, v0] + [h for h in hpos if h < k0 and k0 - h < esize])
        # The table: the smallest power of two of which two thirds hold n.
        tsize = 8
        while tsize * 2 // 3 < n:
            tsize *= 2
        ix = 1 if tsize <= 0xff else 2 if tsize <= 0xffff else 4
        indices = start - tsize * ix
        head = [i * w for i in range(indices // w)]
        size_at = [o for o in head if kw[o // w] == tsize]
        nent_at = [o for o in head if kw[o // w] == n]
        cand = (tuple(size_at), tuple(nent_at), indices, esize, k0 - start, v0 - start)
        found = cand if found is None else found
        if cand[2:] != found[2:]:
            note('dk: the entries move between dicts')
            return
        found = (tuple(set(found[0]) & set(size_at)), tuple(set(found[1]) & set(nent_at))) + \
            found[2:]
    dk_size = only(sorted(found[0]), 'dk_size')
    dk_nentries = only(sorted(found[1]), 'dk_nentries')
    if NONE in (dk_size, dk_nentries):
        return
    out['dk_size'], out['dk_nentries'] = dk_size, dk_nentries
    out['dk_indices'], out['dk_entry_size'] = found[2], found[3]
    out['dk_entry_key'], out['dk_entry_value'] = found[4], found[5]


def main():
    for k in ('c_task', 'c_future', 'name_may_be_int'):
        out[k] = 0
    for k in ('task_set', 'task_type', 'future_type', 'futureiter_type', 'task_size',
              'fut_loop', 'fut_state', 'state_pending', 'state_cancelled',
              'state_finished', 'task_fut_waiter', 'task_coro', 'task_name',
              'name_int_prefix', 'asend_size', 'asend_gen', 'task_node'):
        out[k] = NONE
    for k in ('dk_size', 'dk_nentries', 'dk_indices', 'dk_entry_size', 'dk_entry_key',
              'dk_entry_value'):
        out[k] = NONE
    out['hexversion'] = '0x%x' % sys.hexversion
    try:
        import ctypes
        out['word'] = ctypes.sizeof(ctypes.c_void_p)
        import asyncio
        import asyncio.tasks as tasks
    except Exception as e:
        note('cannot import ctypes and asyncio: %r' % e)
        return
    if hasattr(tasks, '_scheduled_tasks') and hasattr(tasks, '_eager_tasks'):
        out['task_set'] = 'scheduled_eager'
    elif hasattr(tasks, '_all_tasks'):
        out['task_set'] = 'all_tasks'
    try:
        import _asyncio as C
    except ImportError as e:
        note('no C accelerator: %r' % e)
        C = None
    out['c_task'] = int(C is not None and asyncio.Task is C.Task)
    out['c_future'] = int(C is not None and asyncio.Future is C.Future)
    out['task_type'] = tp_name(asyncio.Task)
    out['future_type'] = tp_name(asyncio.Future)
    if C is not None:
        loop = asyncio.new_event_loop()
        it = iter(C.Future(loop=loop))
        if type(it).__module__ == '_asyncio':
            out['futureiter_type'] = tp_name(type(it))
        loop.close()
        try:
            task_layout(C, asyncio)
        except Exception as e:
            note('task layout: %r' % e)
    try:
        asend_layout()
    except Exception as e:
        note('asend layout: %r' % e)
    if sys.version_info < (3, 11):
        try:
            dict_keys_layout()
        except Exception as e:
            note('dict keys layout: %r' % e)


if __name__ == '__main__':
    main()
    sys.stdout.write('asyncprobe=2 ' + ' '.join('%s=%s' % kv for kv in out.items()) + '\n')
    sys.stdout.flush()
    # Skips the interpreter's teardown (warnings about objects left behind).
    import os
    os._exit(0)
