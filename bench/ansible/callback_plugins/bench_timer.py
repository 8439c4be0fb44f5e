"""Records how long a playbook's tasks take, for bench/bench.py.

Writes {"tasks": seconds} to $BENCH_TIMER_OUT: from the first task's start to the end of the
run, which leaves out ansible-playbook's own start-up (Python imports, config, inventory,
playbook parsing) and measures only what the tasks cost.
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_timer
type: aggregate
short_description: time from the first task to the end of the play, for benchmarks
requirements:
  - enable in configuration
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._first = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._first is None:
            self._first = time.perf_counter()

    def v2_playbook_on_stats(self, stats):
        out = os.environ.get("BENCH_TIMER_OUT")
        if out and self._first is not None:
            with open(out, "w") as f:
                json.dump({"tasks": time.perf_counter() - self._first}, f)
