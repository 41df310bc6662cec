"""One module per ``rlgen`` command, named as it is typed: ``rlgen run`` is :mod:`rlgen.commands.run`.

A command module is a door: its options and help, the output it prints, and one import of the
library that does the work, made when the command runs, so that ``rlgen --help`` (which imports
every command module for its one-line help) loads no library. A command module never imports
another; what two commands share lives in a library below them.
"""
