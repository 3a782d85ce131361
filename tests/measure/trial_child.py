"""Run one long veth trial in a child process, for the crash and signal tests.

Usage: python -m tests.measure.trial_child PAIR PORT DURATION
(``NICTUNE_STATE_DIR`` says where the journal goes.)
"""

from __future__ import annotations

import signal
import sys

from nictune.measure._base import Workload
from nictune.measure.testbeds.veth import VethTestbed
from tests.measure.support import CRASH_SETTINGS


def main() -> None:
    # Python's own SIGINT handling, whatever the test run inherited (a background job's
    # SIGINT is ignored, and an ignored signal does not interrupt a trial).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    name, port, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    testbed = VethTestbed(name, port=port)
    testbed.measure(CRASH_SETTINGS, Workload("tcp", "tcp", duration_s=duration, omit_s=0), 1, 0)


if __name__ == "__main__":
    main()
