"""The 0.1.0 distribution's own tests run in a subprocess, against its
installed wheel (test_dist_0_1.py); this suite must not collect them."""

collect_ignore = ["dist_0_1"]
