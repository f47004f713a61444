"""Fig. 1 / Fig. 10a-c claims, checked on every run (neutrino_ae.report.claims).

Shape claims hold for any attention kernel's DMAT (the paper's, the sample's, a fresh one); the
ground-truth claims judge a sample bundle against the execution model that wrote it, where every
access is one record and nothing is rounded: counts and clocks must match exactly.
"""

from neutrino_ae.report.claims import Claim, Truth

_EXACT = ("every modelled access is one trace record and the .dmat counts records per (clock, page): "
          "nothing is sampled or rounded")

CLAIMS = (
    Claim("accesses", "Every DMAT plot holds the kernel's global-memory accesses", "Fig. 1, Fig. 10a-c",
          left="{fig}.accesses", op=">", right=0),
    Claim("tiles", "The accesses stream over several pages (the tensors' tiles)", "Fig. 1, Fig. 10a-c",
          left="{fig}.pages", op=">=", right=2),
    # Time order, which a reversed or shuffled clock axis breaks: a block reads its Q tile before its
    # K/V loop and writes O after it; clocks count from each thread's kernel entry, so this holds
    # across blocks too. Judged where the tensors are named (tensor.trace beside the trace).
    Claim("q-before-o", "Q is read before O is written: every Q access precedes every O access",
          "Fig. 1, Fig. 10a-c (FlashAttention: Q tile loaded before the K/V loop, O stored after it)",
          left="{fig}.q.last_clock", op="<", right="{fig}.o.first_clock",
          expected="{fig}.q.last_clock < {fig}.o.first_clock (named tensors)"),
    Claim("kv-during-loop", "K and V are read between Q's load and O's store",
          "Fig. 1, Fig. 10a-c (the K/V tiles stream in the loop)",
          left="{fig}.k.first_clock", op=">=", right="{fig}.q.first_clock",
          expected="{fig}.k.first_clock >= {fig}.q.first_clock (named tensors)"),
    Truth("accesses-truth", "Each figure holds exactly the accesses the kernel's shapes imply",
          "sample model: ground_truth.dmat.<fig>.expected_accesses (each Q/O row once, K and V once per m-tile)",
          key="{fig}.accesses", why=_EXACT),
    Truth("tensor-accesses-truth", "Each tensor's accesses, as the model wrote them",
          "sample model: ground_truth.dmat.<fig>.accesses_in_dmat, matched to our tensor names by pointer",
          key="{fig}.{tensor}.accesses", why=_EXACT),
    Truth("pages-truth", "The pages the accesses touch", "sample model: ground_truth.dmat.<fig>.num_pages",
          key="{fig}.pages", why=_EXACT),
    Truth("clock-truth", "The last access clock (the kernel's length in the figure)",
          "sample model: ground_truth.dmat.<fig>.max_clock", key="{fig}.max_clock",
          why="clocks are whole cycles in the trace and in the model"),
)
