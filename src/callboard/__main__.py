from callboard.cli.main import main

main()
