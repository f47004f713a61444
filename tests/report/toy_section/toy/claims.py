"""Fig. 99's claims (optional for a section): a shape claim and a ground-truth claim."""

from neutrino_ae.report.claims import Claim, Truth

CLAIMS = (
    Claim("toy-positive", "the counts add up to more than nothing", "Fig. 99", left="total.count", op=">", right=0),
    Truth("toy-total-truth", "the total is the sample model's", "sample model: ground_truth.toy.total",
          key="total.count", why="whole numbers, summed exactly"),
)
