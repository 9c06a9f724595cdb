"""A stand-in for matplotlib (not installed by the project): the harness's programs plot only
after training, and nothing they draw is compared. Last on sys.path: an installed matplotlib
is used where there is one."""
