"""What every probe's figures share: the house style, figure creation, palettes and legends
(:mod:`.theme`). Each probe's figures live in its own package (NCIMP's:
:mod:`ncprobe.ncimp.figures`); :mod:`ncprobe.drawing` saves them. Names no probe.
"""
