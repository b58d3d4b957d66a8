"""dev: does transposing NT's operands into TN and running the TN kernel pay? (timing only)"""
import sys, torch, cupy
import autotune

torch.backends.cuda.matmul.allow_tf32 = False
SRC = r'''
extern "C" __global__ void __launch_bounds__(256) xpose(const float* __restrict__ src, float* __restrict__ dst, int R, int C) {
  __shared__ float t[64][65];
  int c0 = blockIdx.x * 64, r0 = blockIdx.y * 64;
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  #pragma unroll
  for (int i = 0; i < 4; i++) {
    int r = r0 + ty + 16 * i, c = c0 + 4 * tx;
    if (r < R && c + 3 < C) {
      float4 v = __ldg(reinterpret_cast<const float4*>(src + (size_t)r * C + c));
      t[ty + 16 * i][4 * tx] = v.x; t[ty + 16 * i][4 * tx + 1] = v.y; t[ty + 16 * i][4 * tx + 2] = v.z; t[ty + 16 * i][4 * tx + 3] = v.w;
    } else {
      for (int j = 0; j < 4; j++) if (r < R && c + j < C) t[ty + 16 * i][4 * tx + j] = src[(size_t)r * C + c + j];
    }
  }
  __syncthreads();
  #pragma unroll
  for (int i = 0; i < 4; i++) {
    int oc = ty + 16 * i, orow = c0 + oc, ocol = r0 + 4 * tx;
    if (orow < C && ocol + 3 < R) {
      float4 v = make_float4(t[4 * tx][oc], t[4 * tx + 1][oc], t[4 * tx + 2][oc], t[4 * tx + 3][oc]);
      *reinterpret_cast<float4*>(dst + (size_t)orow * R + ocol) = v;
    } else {
      for (int j = 0; j < 4; j++) if (orow < C && ocol + j < R) dst[(size_t)orow * R + ocol + j] = t[4 * tx + j][oc];
    }
  }
}
'''
xk = cupy.RawKernel(SRC, "xpose", options=("-std=c++17",))

def xpose(src, dst):
    R, C = src.shape
    xk(((C + 63) // 64, (R + 63) // 64), (256,), (cupy.asarray(src), cupy.asarray(dst), cupy.int32(R), cupy.int32(C)))

def time_ms(run, reps=20, rounds=5):
    for _ in range(3): run()
    best = 1e9
    for _ in range(rounds):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps): run()
        e.record(); e.synchronize()
        best = min(best, s.elapsed_time(e) / reps)
    return best

mm = autotune.load(defaults_only=True)
for S in map(int, sys.argv[1:]):
    M = N = K = S
    x = torch.randn(M, K, device="cuda"); W = torch.randn(N, K, device="cuda")
    xt = torch.empty(K, M, device="cuda"); wt = torch.empty(K, N, device="cuda")
    out = torch.empty(M, N, device="cuda")
    xpose(x, xt); xpose(W, wt); torch.cuda.synchronize()
    assert torch.equal(xt, x.t()) and torch.equal(wt, W.t())
    ref = x.double() @ W.double().t()
    def err(y): return float(torch.linalg.norm(y.double() - ref) / torch.linalg.norm(ref))
    plan = lambda: (xpose(x, xt), xpose(W, wt), mm(xt, wt, out=out, trans_a=True))
    plan(); print(S, "plan err", err(out), "NT err", err(mm(x, W, trans_b=True)))
    t = {
        "torch x@W.T": time_ms(lambda: torch.matmul(x, W.t(), out=out)),
        "NT default": time_ms(lambda: mm(x, W, out=out, trans_b=True)),
        "NN default": time_ms(lambda: mm(x, wt, out=out)),
        "TN default": time_ms(lambda: mm(xt, wt, out=out, trans_a=True)),
        "xpose one": time_ms(lambda: xpose(W, wt)),
        "torch .t().contiguous()": time_ms(lambda: W.t().contiguous()),
        "plan xx+TN": time_ms(plan),
        "plan xW+NN": time_ms(lambda: (xpose(W, wt), mm(x, wt, out=out))),
    }
    ref_ms = t["torch x@W.T"]
    for k, v in t.items():
        extra = f" {2 * 4 * S * S / v / 1e9:.0f} GB/s" if "xpose" in k or "contig" in k else f" {ref_ms / v:.1%} of torch"
        print(f"{S} {k:28s} {v:.4f} ms{extra}")
