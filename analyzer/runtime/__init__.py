"""The parser's runtime: standard library only; generated parser modules copy it as is.

    call_forms.py  call ids and calls written as one JSON object: what the description records as is
    shape.py       the output shape (what a model writes), as data that serialises to JSON
    message.py     what a parse gives: an OpenAI-style message, and the deltas of a stream
    values.py      reading JSON and Python values the way models write them
    schema.py      checking arguments against a tool's JSON schema
    calls.py       the tools a parse checks calls against, and call ids
    match.py       matching one call of a shape, one matcher per part kind
    headers.py     the other ways a model writes a call's header, read off the shape's own headers
    stream.py      the parser: a state machine over the output, fed in chunks of any size
    command.py     the command line of a generated parser module

Nothing here imports the rest of the project or anything outside the standard library (a test runs
it under ``python -I -S`` from a folder holding only these files), and the modules import each
other only through single-line relative imports, which the parser generator drops when it copies
them one after another into one module.
"""
