#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""holder_fake.py - a stand-in cache holder that speaks preload/holder_proto.h
with the kernel's page cache behind it, to test the shim's client side
(preload/remote*.c) alone: tests/shim-client.sh. Not the holder: no wtio,
no lease, no reference counting; one lock around every request.

    holder_fake.py NAME LOG   serve @NAME, log one line per request to LOG

A path containing "notserved" gets HOLDER_NOT_SERVED; one containing
"wberr" has its demotion report a write-back error (EIO) to the first
DEMOTED reply of each of its OFDs. SIGTERM ends it.
"""
import array
import mmap
import os
import socket
import struct
import sys
import threading

REQ = struct.Struct("<IIQqqqq")
REP = struct.Struct("<qqqq")
SERVED, NOT_SERVED, DEMOTED = 1 << 40, 1 << 41, 1 << 42
OPS = ["", "HELLO", "BUFFER", "OPEN", "REF", "UNREF", "READ", "WRITE",
       "LSEEK", "SIZE", "SIZE_INO", "FTRUNCATE", "FSYNC", "FDATASYNC",
       "SYNC_RANGE", "SYNCFS", "FALLOCATE", "SETFL", "GETFL", "DEMOTE",
       "FORK_PREPARE", "FORK_DONE", "EXEC", "STATS"]
RWF_APPEND = 0x10

lock = threading.Lock()
inodes = {}      # (dev, ino) -> {"fd", "demoted"}
ofds = {}        # id -> {"key", "pos", "flags", "kfd"}
next_ofd = [1]
next_token = [1]
log = None


def say(line):
    with open(log, "a") as f:
        f.write(line + "\n")


def demote(key):
    ino = inodes[key]
    if ino["demoted"]:
        return
    ino["demoted"] = True
    for o in ofds.values():
        if o["key"] != key:
            continue
        fl = o["flags"] & (os.O_ACCMODE | os.O_APPEND | os.O_NONBLOCK)
        o["kfd"] = os.open("/proc/self/fd/%d" % ino["fd"], fl)
        os.lseek(o["kfd"], o["pos"], os.SEEK_SET)


def handle(conn, st, op, ofd, a, fds):
    """One request: (status, val, fd to send or None)."""
    o = ofds.get(ofd)
    if op == 1 or op == 2:                       # HELLO, BUFFER
        size = a[1] if op == 1 else a[0]
        st["buf"] = mmap.mmap(fds[0], size)
        return 0, 0, None
    if op == 3:                                  # OPEN
        buf = st["buf"]
        path = bytes(buf[:buf.find(b"\0")]).decode()
        if "notserved" in path:
            return NOT_SERVED, 0, None
        fl = a[0] & (os.O_CREAT | os.O_EXCL | os.O_TRUNC)
        try:
            fd = os.open(path, os.O_RDWR | fl, a[1],
                         dir_fd=fds[0] if a[2] else None)
        except IsADirectoryError:
            return NOT_SERVED, 0, None
        except OSError as e:
            if e.errno != 13 or (a[0] & os.O_ACCMODE) != os.O_RDONLY:
                return -e.errno, 0, None
            fd = os.open(path, os.O_RDONLY, dir_fd=fds[0] if a[2] else None)
        s = os.fstat(fd)
        key = (s.st_dev, s.st_ino)
        if key in inodes and inodes[key]["demoted"]:
            os.close(fd)
            return NOT_SERVED, 0, None
        if key in inodes:
            os.close(fd)
        else:
            inodes[key] = {"fd": fd, "demoted": False}
        oid = next_ofd[0]
        next_ofd[0] += 1
        ofds[oid] = {"key": key, "pos": 0, "flags": a[0], "kfd": -1,
                     "err": -5 if "wberr" in path else 0}
        return SERVED, oid, inodes[key]["fd"]
    if op == 10:                                 # SIZE_INO
        ino = inodes.get((a[0], a[1]))
        if not ino or ino["demoted"]:
            return NOT_SERVED, 0, None
        return 0, os.fstat(ino["fd"]).st_size, None
    if op == 15:                                 # SYNCFS
        for ino in inodes.values():
            os.fsync(ino["fd"])
        return 0, 0, None
    if op == 20:                                 # FORK_PREPARE
        t = next_token[0]
        next_token[0] += 1
        return t, t, None
    if op in (21, 22, 23):                       # FORK_DONE, EXEC, STATS
        return 0, 0, None
    if o is None:
        return -9, 0, None                       # EBADF
    if op == 19:
        demote(o["key"])
    if inodes[o["key"]]["demoted"]:
        err, o["err"] = o["err"], 0
        return DEMOTED, err, o["kfd"]
    fd = inodes[o["key"]]["fd"]
    acc = o["flags"] & os.O_ACCMODE
    if op in (4, 5):                             # REF, UNREF
        return 0, 0, None
    if op in (6, 7):                             # READ, WRITE
        if (op == 6 and acc == os.O_WRONLY) or \
           (op == 7 and acc == os.O_RDONLY):
            return -9, 0, None
        buf = st["buf"]
        off = o["pos"] if a[0] < 0 else a[0]
        if op == 7 and (o["flags"] & os.O_APPEND or a[2] & RWF_APPEND):
            off = os.fstat(fd).st_size
        if op == 6:
            data = os.pread(fd, a[1], off)
            buf[:len(data)] = data
            n = len(data)
        else:
            n = os.pwrite(fd, bytes(buf[:a[1]]), off)
        if a[0] < 0 or (op == 7 and o["flags"] & os.O_APPEND):
            o["pos"] = off + n
        return n, 0, None
    if op == 8:                                  # LSEEK
        base = {0: 0, 1: o["pos"], 2: os.fstat(fd).st_size}.get(a[1])
        if base is None or base + a[0] < 0:
            return -22, 0, None
        o["pos"] = base + a[0]
        return o["pos"], 0, None
    if op == 9:
        return 0, os.fstat(fd).st_size, None
    if op == 11:
        os.ftruncate(fd, a[0])
        return 0, 0, None
    if op in (12, 13, 14):
        os.fsync(fd)
        return 0, 0, None
    if op == 16:
        os.posix_fallocate(fd, a[1], a[2])
        return 0, 0, None
    if op == 17:
        o["flags"] = (o["flags"] & ~(os.O_APPEND | os.O_NONBLOCK)) | \
                     (a[0] & (os.O_APPEND | os.O_NONBLOCK))
        return 0, 0, None
    if op == 18:
        return o["flags"] & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_CLOEXEC), 0, None
    return -95, 0, None                          # EOPNOTSUPP


def serve(conn):
    st = {}
    pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET,
                                              socket.SO_PEERCRED, 12))[0]
    while True:
        try:
            msg, anc, _, _ = conn.recvmsg(REQ.size, socket.CMSG_SPACE(16))
        except OSError:
            break
        if not msg:
            break
        fds = []
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[:len(data) - len(data) % 4])
                fds.extend(a)
        op, _, ofd, a0, a1, a2, a3 = REQ.unpack(msg)
        with lock:
            try:
                status, val, sfd = handle(conn, st, op, ofd,
                                          (a0, a1, a2, a3), fds)
            except OSError as e:
                status, val, sfd = -(e.errno or 5), 0, None
            say("%d %s ofd=%d args=%d,%d,%d,%d -> %d" %
                (pid, OPS[op] if op < len(OPS) else op, ofd, a0, a1, a2, a3,
                 status))
        for fd in fds:
            os.close(fd)
        anc = []
        if sfd is not None and sfd >= 0:
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                    array.array("i", [sfd]).tobytes())]
        try:
            conn.sendmsg([REP.pack(status, val, 0, 0)], anc)
        except OSError:
            break
    conn.close()


def main():
    global log
    name, log = sys.argv[1], sys.argv[2]
    os.umask(0)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind("\0" + name)
    s.listen(64)
    say("ready")
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
