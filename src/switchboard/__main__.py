from switchboard.cli.main import main

main()
