"""Hypothesis profiles of the fuzz suite: a bounded run inside ``make test`` and a long one in ``make fuzz``.

``NDVAL_FUZZ=long`` (set by ``make fuzz``) selects the long profile; the default keeps the whole suite
well under a minute on 2 cores. Every input is SYNTHETIC: mutations of synthetic case files, configs
and traces written by the tests.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ndval-bounded", max_examples=12, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("ndval-long", max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

#: the profile for this run
PROFILE = "ndval-long" if os.environ.get("NDVAL_FUZZ") == "long" else "ndval-bounded"
#: wall-clock bound per input (s) and peak Python allocation bound per input (bytes)
MAX_SECONDS = 10.0
MAX_BYTES = 2**30
