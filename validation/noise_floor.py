"""Tolerances from a noise floor measured in the same test run.

A comparison of two fp32 computations that should agree "up to rounding" is judged against how far
apart two computations are that differ ONLY in rounding: the same run with another summation order
(another OpenBLAS kernel set, see validation/floor_kernels.sh), measured by the same
test, on the same machine, just before. The verdict is

    difference <= FACTOR * floor

and every comparison prints one line in the form that validation/run_across_kernels.sh collects:

    noise-floor: WHAT difference D floor F ratio D/F allowed FACTOR ok|FAIL

Why a factor and not the floor itself: a floor is one draw of a chaotic quantity. Training
amplifies last-bit differences (Adam turns the sign of a near-zero gradient element into a whole
learning-rate step), so two rounding perturbations of the same size land at distances that differ
by a few times between draws: across the kernel sets of one machine the floors of one configuration
spread by 3x (4.4e-6 to 1.2e-5 for the weights of qk_head_post, docs in the test scripts). FACTOR
covers that spread with room; a real defect (a missing all-reduce, a mis-sharded tensor, a wrong
learning rate) moves the same figures by orders of magnitude more, which the tests that use this
module also check where they can (the "power" comparisons).
"""
import math

# The distance between a parallel layout and the single-rank run is another summation order's
# distance, so it should sit near the floor (ratio ~1); 10 covers the draw-to-draw spread (3x
# measured) with room, and real defects sit at ratios of 1e3 and more.
DEFAULT_FACTOR = 10.0


def verdict(what, difference, floor, factor=DEFAULT_FACTOR):
    """Prints the noise-floor line for one comparison and returns whether it passes."""
    if math.isnan(difference) or math.isnan(floor):
        ok, ratio = False, float("nan")
    elif floor > 0:
        ratio = difference / floor
        ok = difference <= factor * floor
    else:  # the perturbation changed nothing: only an identical result is within "rounding"
        ratio = 0.0 if difference == 0 else float("inf")
        ok = difference == 0
    print(f"noise-floor: {what} difference {difference:.3e} floor {floor:.3e} ratio {ratio:.3g} "
          f"allowed {factor:g} {'ok' if ok else 'FAIL'}")
    if floor == 0 and difference > 0:
        print("  the floor runs changed nothing: does OpenBLAS honour OPENBLAS_CORETYPE here (a DYNAMIC_ARCH "
              "build, as Debian's)? Without another kernel set there is no rounding floor to measure.")
    return ok


def power(what, difference, floor, factor=DEFAULT_FACTOR):
    """The other side of a tolerance: a change that must NOT pass as rounding (e.g. a learning rate
    1% off) has to land beyond factor * floor, or the test could not tell a defect from noise."""
    ok = difference > factor * floor
    ratio = difference / floor if floor > 0 else float("inf")
    print(f"noise-floor-power: {what} difference {difference:.3e} floor {floor:.3e} ratio {ratio:.3g} "
          f"must exceed {factor:g} {'ok' if ok else 'FAIL'}")
    return ok
