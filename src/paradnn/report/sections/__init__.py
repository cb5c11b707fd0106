"""One module per report section, each holding its `SECTION`; report/build.py orders them."""
