from autotune.cli.commands import main

main()
