"""Who may do what: rules, modes, how a command is read, what is protected, the sandbox."""
