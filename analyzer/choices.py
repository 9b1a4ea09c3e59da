"""The choices the command line offers, in a module that imports nothing.

Option parsing and ``--help`` read them before any command runs, so they must not load the library
(start-up time); the library reads them from here too, so each list has one home.
"""

ENGINE_NAMES = ("minijinja", "jinja2")
DEFAULT_ENGINE = "minijinja"
# how a template with no call format of its own is given tools through the prompt
PROMPTED_STYLES = ("json", "fenced")
# how export and serve choose the call format: the template's own, a prompted style, or native-else-json
TOOL_FORMATS = ("auto", "native", *PROMPTED_STYLES)
DEFAULT_N_PREDICT = 512
# how closely a grammar holds the template's own whitespace and JSON separators
WHITESPACE_MODES = ("exact", "flexible")
