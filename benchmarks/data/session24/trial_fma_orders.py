"""Trial (session 24): other FMA orders for blocked's ORDER=0 source, as explicit statements."""
LOOP = """            #pragma unroll
            for (int i = 0; i < WMITER * TM; ++i) {
                #pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i][j] += fa[i] * fb[j];
            }
"""


def serp(n, odd):
    return list(reversed(range(n))) if odd else list(range(n))


def order(name, R, C, TM=8, TN=4):
    out = []
    if name == "rows":
        out = [(i, j) for i in range(R) for j in range(C)]
    elif name == "serp":
        out = [(i, j) for i in range(R) for j in serp(C, i % 2)]
    elif name == "pairs":
        out = [(2 * p + d, j) for p in range(R // 2) for j in serp(C, p % 2) for d in (0, 1)]
    elif name == "colpairs":
        out = [(i, 2 * q + d) for q in range(C // 2) for i in serp(R, q % 2) for d in (0, 1)]
    elif name == "blocks4":
        for bi in range(R // 4):
            for bj in serp(C // 4, bi % 2):
                for r in range(4):
                    out += [(4 * bi + r, 4 * bj + j) for j in serp(4, r % 2)]
    elif name == "subtiles":
        for bi in range(R // TM):
            for bj in serp(C // TN, bi % 2):
                for r in range(TM):
                    out += [(TM * bi + r, TN * bj + j) for j in serp(TN, r % 2)]
    elif name == "blocks2":
        for bi in range(R // 2):
            for bj in serp(C // 2, bi % 2):
                out += [(2 * bi, 2 * bj), (2 * bi, 2 * bj + 1), (2 * bi + 1, 2 * bj + 1), (2 * bi + 1, 2 * bj)]
    assert sorted(out) == [(i, j) for i in range(R) for j in range(C)], name
    return out


def transform(src, name, R=16, C=8):
    if LOOP not in src:  # another kernel (the environment's canary): as it is
        return src
    body = "".join(f"            acc[{i}][{j}] += fa[{i}] * fb[{j}];\n" for i, j in order(name, R, C))
    return src.replace(LOOP, body)
