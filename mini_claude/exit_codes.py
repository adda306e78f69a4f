"""Process exit codes, the same in every mode."""

EXIT_OK = 0
EXIT_FAILED = 1  # a turn failed (the message says why)
EXIT_USAGE = 2  # bad flags or configuration
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM
EXIT_OUTPUT_CLOSED = 141  # the reader of stdout went away (`| head -1`), as SIGPIPE ends a tool
