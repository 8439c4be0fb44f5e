"""Stand-in for the get-pip.py bootstrap script that ansible-test downloads.

ansible-test runs it as `python get-pip.py [pip options] pip==X setuptools wheel` inside a fresh
virtualenv created without pip. This version bootstraps pip with the standard library's ensurepip,
then installs what was asked for from the package index.
"""
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
