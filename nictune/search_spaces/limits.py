"""How large a search space may be: checked on the plain definition, before any knob is built.

A space is user input (a file, or a JSON body posted to the service). Without these caps a
definition of a few hundred kilobytes (3,000 integer knobs) made the service build an engine
of gigabytes. Each cap is far above what a real NIC space needs (the built-in ones have at
most 25 knobs and 16 choices a knob).
"""

from __future__ import annotations

#: Knobs a space may have.
MAX_KNOBS = 64
#: Values a choice knob may list.
MAX_CHOICES = 256
#: Largest magnitude of an integer knob's bounds (and of a float knob's): 2**53, the largest
#: integer a float holds exactly (engines place values by a float position in the range).
MAX_MAGNITUDE = 2**53
#: Constraints a space may have, and the longest text of one.
MAX_CONSTRAINTS = 32
MAX_CONSTRAINT_CHARS = 200
#: Profiles a space may define.
MAX_PROFILES = 32
#: Settings (target: value pairs) one knob value may stand for.
MAX_SETTINGS_PER_VALUE = 16

__all__ = [
    "MAX_CHOICES",
    "MAX_CONSTRAINTS",
    "MAX_CONSTRAINT_CHARS",
    "MAX_KNOBS",
    "MAX_MAGNITUDE",
    "MAX_PROFILES",
    "MAX_SETTINGS_PER_VALUE",
]
