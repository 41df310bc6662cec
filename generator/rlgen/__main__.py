from rlgen.cli import main

main()
