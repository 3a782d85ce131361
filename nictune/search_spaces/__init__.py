"""Search spaces: knob types, conditions, constraints, canonical configurations, built-ins."""

from nictune.search_spaces._base import (
    BOTTLENECKS,
    Condition,
    Family,
    Knob,
    Setting,
    SettingValue,
    Value,
    split_target,
)
from nictune.search_spaces.constraints import Constraint
from nictune.search_spaces.knobs import BoolKnob, ChoiceKnob, FloatKnob, IntKnob
from nictune.search_spaces.loader import (
    builtin_names,
    load_space,
    space_from_dict,
    space_from_yaml,
)
from nictune.search_spaces.space import Configuration, SearchSpace

__all__ = [
    "BOTTLENECKS",
    "BoolKnob",
    "ChoiceKnob",
    "Condition",
    "Configuration",
    "Constraint",
    "Family",
    "FloatKnob",
    "IntKnob",
    "Knob",
    "SearchSpace",
    "Setting",
    "SettingValue",
    "Value",
    "builtin_names",
    "load_space",
    "space_from_dict",
    "space_from_yaml",
    "split_target",
]
