from paradnn.cli import main

main()
