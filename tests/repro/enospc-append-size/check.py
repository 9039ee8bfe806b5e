import sys, os
data = open(sys.argv[1],'rb').read()
ends = [(int(l.split()[0]), int(l.split()[1])) for l in open(sys.argv[2]) if len(l.split()) == 2]
m = max(o + n for o, n in ends)
bad = 0
for o, n in ends:
    for i in range(o, o + n):
        if data[i] != ((i*7 + i//4096) % 253 + 1): bad += 1; break
print("%s acked %d bad_acked %d max_acked_end %d disk_size %d past_last_ack %d" % (sys.argv[3], len(ends), bad, m, len(data), len(data) - m))
