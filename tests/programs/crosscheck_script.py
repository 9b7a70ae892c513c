# A small Python script for the native-vs-ptrace cross-check: arithmetic,
# a dict, a string join and a file write.
counts = {}
for word in "the quick brown fox jumps over the lazy dog the end".split():
    counts[word] = counts.get(word, 0) + 1
total = sum(i * i for i in range(200))
with open("out.txt", "w") as f:
    f.write(",".join(f"{k}={v}" for k, v in sorted(counts.items())))
print(total, counts["the"])
