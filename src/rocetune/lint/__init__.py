"""`rocetune lint`: checks over env files, reading Features (so it also works on the controller)."""
