"""What rocetune knows about NCCL: its variables, value syntax, config precedence and releases."""
