"""An OS sandbox (bubblewrap) around every command the agent runs: what a command can
touch no longer depends on judging its command line right. See ``policy`` for what it
allows, ``bwrap`` for how, ``gate`` for how it changes the permission questions."""
