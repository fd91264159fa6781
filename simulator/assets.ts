/**
 * Small binary assets the simulator serves, embedded as base64 so the simulator needs no files on
 * disk and no ffmpeg at run time, plus the magic-byte sniffing used to validate uploads.
 *
 * The assets were generated once with ffmpeg:
 *   MP4:   ffmpeg -f lavfi -i "testsrc2=size=160x90:rate=12:duration=1" -c:v libx264 -profile:v baseline
 *            -level 3.0 -pix_fmt yuv420p -preset veryslow -crf 32 -movflags +faststart -an -map_metadata -1
 *            -fflags +bitexact -flags:v +bitexact sample.mp4            (H.264, 160x90, 1 s, 12 frames, moov first)
 *   thumbnail PNG:   first frame of the same test source, 160x90
 *   spritesheet JPEG: 4 frames of the MP4 scaled to 80x45 and tiled 4x1 (320x45)
 *
 * The profile picture PNG is the gateway's default avatar (src/files/default-avatar.ts).
 */
import { DEFAULT_AVATAR_PNG } from '../src/files/default-avatar';

const SAMPLE_MP4_B64 =
  'AAAAIGZ0eXBpc29tAAACAGlzb21pc28yYXZjMW1wNDEAAAMybW9vdgAAAGxtdmhkAAAAAAAAAAAAAAAAAAAD6AAAA+gAAQAAAQAA' +
  'AAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAgAA' +
  'AoF0cmFrAAAAXHRraGQAAAADAAAAAAAAAAAAAAABAAAAAAAAA+gAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAA' +
  'AAAAAAAAAAAAAABAAAAAAKAAAABaAAAAAAAkZWR0cwAAABxlbHN0AAAAAAAAAAEAAAPoAAAAAAABAAAAAAH5bWRpYQAAACBtZGhk' +
  'AAAAAAAAAAAAAAAAAAAwAAAAMABVxAAAAAAALWhkbHIAAAAAAAAAAHZpZGUAAAAAAAAAAAAAAABWaWRlb0hhbmRsZXIAAAABpG1p' +
  'bmYAAAAUdm1oZAAAAAEAAAAAAAAAAAAAACRkaW5mAAAAHGRyZWYAAAAAAAAAAQAAAAx1cmwgAAAAAQAAAWRzdGJsAAAAvHN0c2QA' +
  'AAAAAAAAAQAAAKxhdmMxAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAAAKAAWgBIAAAASAAAAAAAAAABDExhdmMgbGlieDI2NAAAAAAA' +
  'AAAAAAAAAAAAAAAAAAAAGP//AAAAMmF2Y0MBQsAe/+EAGWdCwB6mEQo35MBEAAADAAQAAAMAYDxYuEYBAAZoyEIGSyAAAAAQcGFz' +
  'cAAAAAEAAAABAAAAFGJ0cnQAAAAAAAC18AAAtfAAAAAYc3R0cwAAAAAAAAABAAAADAAABAAAAAAUc3RzcwAAAAAAAAABAAAAAQAA' +
  'ABxzdHNjAAAAAAAAAAEAAAABAAAADAAAAAEAAABEc3RzegAAAAAAAAAAAAAADAAAB/4AAAFdAAABeQAAAVIAAAFyAAABlQAAAWYA' +
  'AAFSAAABVgAAAT8AAAEbAAABKQAAABRzdGNvAAAAAAAAAAEAAANiAAAAPXVkdGEAAAA1bWV0YQAAAAAAAAAhaGRscgAAAAAAAAAA' +
  'bWRpcmFwcGwAAAAAAAAAAAAAAAAIaWxzdAAAAAhmcmVlAAAWxm1kYXQAAAJzBgX//2/cRem95tlIt5Ys2CDZI+7veDI2NCAtIGNv' +
  'cmUgMTY0IHIzMDk1IGJhZWU0MDAgLSBILjI2NC9NUEVHLTQgQVZDIGNvZGVjIC0gQ29weWxlZnQgMjAwMy0yMDIyIC0gaHR0cDov' +
  'L3d3dy52aWRlb2xhbi5vcmcveDI2NC5odG1sIC0gb3B0aW9uczogY2FiYWM9MCByZWY9MTYgZGVibG9jaz0xOjA6MCBhbmFseXNl' +
  'PTB4MToweDEzMSBtZT11bWggc3VibWU9MTAgcHN5PTEgcHN5X3JkPTEuMDA6MC4wMCBtaXhlZF9yZWY9MSBtZV9yYW5nZT0yNCBj' +
  'aHJvbWFfbWU9MSB0cmVsbGlzPTIgOHg4ZGN0PTAgY3FtPTAgZGVhZHpvbmU9MjEsMTEgZmFzdF9wc2tpcD0xIGNocm9tYV9xcF9v' +
  'ZmZzZXQ9LTIgdGhyZWFkcz0zIGxvb2thaGVhZF90aHJlYWRzPTEgc2xpY2VkX3RocmVhZHM9MCBucj0wIGRlY2ltYXRlPTEgaW50' +
  'ZXJsYWNlZD0wIGJsdXJheV9jb21wYXQ9MCBjb25zdHJhaW5lZF9pbnRyYT0wIGJmcmFtZXM9MCB3ZWlnaHRwPTAga2V5aW50PTI1' +
  'MCBrZXlpbnRfbWluPTEyIHNjZW5lY3V0PTQwIGludHJhX3JlZnJlc2g9MCByY19sb29rYWhlYWQ9NjAgcmM9Y3JmIG1idHJlZT0x' +
  'IGNyZj0zMi4wIHFjb21wPTAuNjAgcXBtaW49MCBxcG1heD02OSBxcHN0ZXA9NCBpcF9yYXRpbz0xLjQwIGFxPTE6MS4wMACAAAAF' +
  'g2WIghPiERUQUEfTIHAAe/wAl6XHlfawbYr1/9AY9c8r7MQaLi2ITMWsj3rjppM5c8tZcer1djt/vtu8jP/rAgIzEhC8ABADOZOE' +
  'x4UqUvZx+eBfkg3CD3dLQtY0pRN+XRFZRFYiCQbGPzI39/83AcHiyAGPLnlfZ73mo9J92f17z3qL3bqCDUKPPLWQo83vW6o82VI3' +
  '0DNQiZDObCzrYg5ZvnEdnG+cC+QpgK6YUprpRncb5xGtr3HvyIq4ioVo9hX5jb/wAh656vttjff/R43zzo9MLqk8fmzzs9r8Stn4' +
  'lHTSblzb7o8vrZ72wm8cbkAYPzghvoZSY2phhuVPvcepyaZuCGRm0NqYJ+y8/S3+iMhFRNaE5csEpZVUAx5XG1f75kV+v/mCXpc9' +
  'X2aqROq1MLi2IbHtrWg6m7WR71veedHnlpkcejhs80b6QPPFM6NsDkDgcgwYSJmrYhDWW32aN84pFBuEGy7WNzfJo8c63qyj//eK' +
  'Ns8aKoiYiO4P4qbi/X3L+Am719wr1/zXolnGiI92nUUu/ZFa7RnKO9e06rbCLXpOm+1L0eL5mO+RusMh1zN1gYmA6DH9tv3PrN3n' +
  'vrbb9z6zd576xPveeaWtZ6Jzx2WRnKHZY173nmlrWeic8dlkZyh2WCAAQZDiQDdwUqZ3cFKmJ8ihoqE+RQ0VHpk9M3RFZJRFZf4W' +
  'hD/F7vufxQ87vf72zZ52e3wYIkHwPMAggE04xeURngHOfUIr/78IkVxdw8GxPdDn5pD/rj8Fr7QUfYICDpOyIpqZfAA7/ou3iOf/' +
  '/+Cs0T+IRxAADgAHmhmhA5DNcw5DNczwTigBiMhB1AA4Qh9gsC3POICCRId4YHkjhgWS5fFaWKwh8B4K3/MuAyKB0R9d/XXfwdCY' +
  '/4lHBUC93+l6Bhn//8k2MLonf//x/+Cf//m343XEcK/4IFfnvBhSGyet53PUeK+HwDjSOIeD//4AS9Ljyvs0YwZMTU9MuWW6sGAY' +
  'NAwDH8z3IBkH5Gov/9rNH5AQ9a4//udYfVukaT8Rv/+fUuXe950e+ed/zZbcKxggTAMjNVwwpTl1OfUI7/78A83AMyomY/tDM+3E' +
  '/zl63XwPa5R4cPGrLlry5jRQGBg9JuEDPoxbld+T1WaNfaGakSID+1PlZM19qcrjZv7X4f+w0E1B7U680Z8Hg/PmmHcMMA/4KwRY' +
  'K1zSIgToKAGoBjfpEuX+ACEz5EiGwQIiyw/gGAfDQLCcGITICrCBICG5siSxgBsomNWE+1LAQEYFqbGKaf/8fw/Q0lYKq5d8FgeQ' +
  'YQTjilCuWFdzADC+qbAhIOWQiLcxawP0dRm3rLvwCAcI45sQ5+XHFAAK+JkfCBAPgEDAAFF10y6+WDEpbnLydl4WhgIfjy/Llbrw' +
  '94GkgZabTpmL+vd/g/WAEV66/axxiP+QNVS0vIaOZ+vdjJj2A39/6ePAOCx4ZexiggCHJMNDUAC6tsgabm7yvTkaaBw/+IeAQWxJ' +
  'I7hhjwgo74wp4TIcDgI5cscCApk0Li49pnF/IqHA46QgkhAUWBJ87Ud8rWAirYw6b17EHSZ5oZe8zC4OAAIEReiAAHDxbBgA4CQp' +
  'EwYxEWJsRNiQkO5DpDuQHDDorssea11qt4SSBhIAsuLzFuXxgN2BuBCa7+3fuX/AONPw37TeybrFzCAAJmBCahL2pgAYvkrPrs3T' +
  'WyacfQR5k68H/xDwCC2IEjzwhMSTJ9OEyHA4RCJY4IEMqCmnimDWJ0JNf45ynuewQiiYynlGxkmNpgppnimHM/930lY0/4LA1ocG' +
  'WwMC+F+RcI8QZM/nP/+wViUJCPPAskEJgicTY31v8OLBXM6Da0fUfTxKGCfHxxp6Y2np5mKiFxHmYYWqYJcAAAFZQZocJ/OggFyu' +
  'ESSABgmpjzlKR9mkfM74gAr9LRFAYHg/hDuXIJ30l0T18hWRkxHxP5wxRDnwwMgSlWvG/YSyjE/+nvy2MIX/RnugHARyhcM30/Lu' +
  'J4gT4Yp13P8vl9Az3+BxNXMI+EAP3/q+gZYZ1+8CNUthBKZEVPt8vIaPNC+P48OgkO4Ery6+6vcq2VyRy8McMvgnDb+E+7u6O/YJ' +
  '/r2yGVsfU0ML8viphXnr9F4jvr+f/A+5+VATucZn8BF623ASt82l6xkEARhHy/Q4I3P4bDIRNmfG+Htw+/c4QCOwhAghGy/4IIId' +
  'yggOCxL+aFb5A0CuGWd9fhy53rMGDpdjDGE0LcYh5y8/khitFLUIw3F/opWjVXmsfcVLl78IeEVqyttf/+HBjvhdoK2sxkSTPEhM' +
  'v1U7X9/okOk3/lCgZCplcIMHVGc69isxLu8//BhcLBi/TwjuAAABdUGaKgn+GyK6wWuRiOVxtsh/wwJCFZ4PecHnkEwzFpYB7/TE' +
  'afViid9i+KhdgkFQ91Ymvso5kdswpFxkBHHAR5OBYBAbCVntXC2NNtTub8fTel4Gb29eGqR8m8jeIBB5+QD/4HD/cuCPvwRdVOs1' +
  '8N6wp/DXCFGoAMBh2xV5NTk+ByghgxFglMedLD8vdJkqJyQKeYnlIODR4i5kt9hp9H5H4FKeLbHvf5f8GI8C2Ew4ZJLAz4CLt4Aw' +
  'D+7nXATmuR8pegb8gRxYRBGdZMSFcqk+ixQMxQsJUZjxgT6DHFsGE9XnBkAcA/CRabgIzewZv+P6BaNLl7nHTNA6ZrPEIUQvnMA0' +
  'BuAT1+s/AJ6/IT1lDWygmsnafB9eelX8PXvpf8egojoogC/gGq3L9q6/ajtQ9uBVix4UJabXPciQXXLR6YDqaluVcdjIOxn7GTGY' +
  '9jLHmZ4++kJh2176vE+hEMlrXG+BR75Ea/y/rSgy8EG3CghDERAAAAFOQZo7Ce78OIi5ljwsCWI9sIjBsr/go7YYETI25zLJJ1X+' +
  'bsEpuCVrsnvfSOmqeSPmBYCQOgUhIEkQLDEpdzsEz7LX9ioc3vwpmuB93OJGHCO1XAgsJqq6r/DFHTq8FMCl1TgdQfrWqUFTDhIC' +
  'T/PydL9PFL+Gr3H5P18SBB9KET4ZnlCnPAdQByW00HV/wAvJL6v3/QHfMW7BT/88GsYnsS79YGmBBCJxhiVYJn5w8NZbrDkI1dkJ' +
  '9L74GkJP+H8734cWbwDvG73AminWKhedgXQS0sCw/qfgSz/6n+mEPDnSw+H+l0ODbPiPY/hGO25CfGnO6iwYAhDZxHMQ8QVnH+8A' +
  'Sq9t0G9/76SBiEdQXajeH/Cw4r/UWqdKC+peDgB015xJnu+Pc/Crwq3wJ8XXv2hAjUK7q/f307iFPc+iF762nhffFBAI+DEIqdIr' +
  '8AAAAW5BmkkCf4bT04sd2h/H/DZcSwkuZcPOz78w6Gc1kB+cLbAgQIPb+CRm83vk5F/D8F5vw4XngUQD8EXzsXAD7apNviU18GYa' +
  'PPnjzY/P9fhW/D5ijfIrYNPH4PVPiusVhXWULDx6vkk7SHfxMYHwmD4EgiAQl3S8eN/sSm3Og8GA3VeIrv097kKqYx1scYucu4co' +
  'IfhmX9AD8APeXO73gfyeFari6/fbPT+p0RS6wpCgOYvCeuCIKJShHmglit9+30ivNQXDKt3dgHaz/+Fgms+LYRIv1l6/wLEOEB0s' +
  '7P8AGsr/tqRPr8H/DYiHffX8AIvudYffCTDIaKSIbydYAbqZmq71+BDS3/1/TBjqof/cMCIW1eImZUJawmVlG48DeAV7yQ9gcXTh' +
  '37vLWdAgCOhynlT/a93LP1BipUotyf/gb/m/93xoIh35lcj//B9+7+RBQ4YWWfnsgV9EhjPk+nY/hrPX5FEst/rU6RR2CvAAAAGR' +
  'QZpZQn+k5+uFu8TDhICF3CNbAm2n69f4ZxzI+VlQ6PiIFg4FYKhgRUoptB2WkjFWbn/vaIGg66vcqD9yYEKEoB0KE7xUTB4y3CDL' +
  '63/J7y+EYRAoWvh0p1rhHAn5t/mD6g8cRr3Cxp+CDrw+DHMMP/6BWCc+ccY0CvFWWs+v3WHAUQEfiINfARukS9sJruvWeM0kXbf5' +
  'mApcOnwG0cNy88eT+f1ldd1wA2811fvmv+GUv5/zil/o76fk8K1WupsycfhALR/hbmw2SZoInkzLbrNjk/uDDYRA10YK2mEEJBqV' +
  'QUPmHJFWIHXtOPrBhBCw8faBtstKMnj69r5JX/J/XjMGKtm/8PwsCVa3XA4BC0ECC8QQv+CD14cBMDSbLLAHCm0YeARi22F2v1Bj' +
  'k9WtD/Q9Iqq6BGnfczAMDjoCI5pDo5QsQcBriQdwL/UB4HAMcIRIPincvEli5fghAoaz8AN/C90eoMVKlPBB6J11gh4MYMPL1wYb' +
  'Tck9/gm8x31xx+3+k8s68flvG45/rU6S/NAAAAFiQZppg3+vfrDLrC/jT9hH4Savr94btu2YCBAg8ne/+EeNkAchqnAfMIAEwi2i' +
  '4MsKHxB65sx061/0XB9DpxAGyF88CQ/ovsKBvd93d93d70uFIZydI03rwTmDkAk39P/SKHamTy8wj/SghBmE4ZEh72zX3gDlNo0H' +
  'V/sJ59OaZfwN30EE4zY/jwig29cSSOAgCECxDm02hC3L/BKBF+nkMTwW+bqGDi7UmLmVAdr+w33fgQKiQ1Zsf/Xjiddre4RDqBCS' +
  'MBNvvfGEpfYAiN3a+AAgf6ZYf4CL020nr/D9hgTSeLXC6CodIcvOCU7JMv/J8xm6ASHyl/wh6L4EEEMEMPBEEGT9+CH9qHgmQ+uC' +
  'EUtcEI8EgbJSmqYQEfy2ARtOjenghPAFCpvH+8a57PL/BDTwh6fhHzfN0uCmDwM5PpEZxW4SW8VBlPyvrb/50NSEuuMdjfgXpZX9' +
  'emOwU3JoLO68AAABTkGaecNzE3btX28SFsZHl5h6nb/vlCZDjV4xc4xc4ShuTyeAKFTeew4dGW5pHwMUJ6+ziTjJYnfq65dzCBoY' +
  'BcDMwMQmDE4JVLp9Pr9m7buye19YRBHpbCAEZgqwS+bm/nu/mG+v8MnEfDHsB0JbYfH3wKv02PznP+nwoBMCgKkI9TsCiTJ5bc6C' +
  'rBaxFjLyQpCgIAjCPCOrPw2sX6A38FmHy/gVPrll8HHIEShEODFXBDMsEXcqYD3UljanglalTAy/4bU5f8EQTAwSj9VNXRP6ghD2' +
  'EIQWDVzlAgo1ZP1DtQ4HzBnL47C/5dYX4LBcaQMHkzHxtcrzfw/UDPdo3AohsKLWAKFTeM08Pjuc7BZn+uq+f5/fl62oPgyCiVTD' +
  'UX8WENDWvR24C9N6hJ2/+TJz34aCPwQESFad4K7u7vd61Gjk325cCBOEVMxMx9QAAAFSQZqIgEcs+ZQk0/4Q/o73GbBMIwIm+Z5l' +
  '73/e/p08ds8p8G2v8fOfXhLucAEXX1NS46GzG838Km9Tc8gCy3NL4/nAqgwDbzZEVEvbi3JSalcPQINk+6/9lf/hY/D3qD3PQCFv' +
  'rPAr7rr5eVAGHku/+egO/AGkvVfvf//RfjsPBEIBEM82fn0zmTo2bXhCpVnqr5esDx/DgomEzCawvoI9h4NTlgm/7eB5Cl17CJxQ' +
  'tQiliI/H3WTKnHW5xKNZ910/bmpFgJCXD4JORw0GYjmmPwm/PJ68F/+T+4T4QYEFb6ocMYIUYyeKCLLD4964N5su8fxsJQUBtTFa' +
  'pl+GbmRTBc/BGG0tYAoVN4r5mI2bR4JeTqR+I+QLAUd/5PZzGQMzYPMLAok9T55x5mF0pbxeiUH7yepahAJAkAU+edv2HZfpYIeY' +
  '7BT29Pf3QQhEEKBMQWAAAAE7QZqYkFcpO7/8Igj5sNiACC/43dXo9HlnHFMtgEHdxPcP9+T07/BiEziwDgH3D8hXAALV3+cr6T3f' +
  'wIPXVE8Tifj8qyfJ+J/i54BLSn2H+o/G7XwUGNwSXWd6KUN045LQ0ceT68EA/H/gjP5z4ABbuTrce/6XHB4IgoRcfPj75F2nwrCp' +
  'nfd+L8Y78VV8nIe/8IwjwiG3N9cFm9XgSlp576ifPvwEPubfgJm7bfeELctBMPZGvmC3g3F+El7SmBnCGTdf8IR0EZ4Ze4sGT0q4' +
  'MVCwLwRHH8RW48gL0ELNxpfC6uZd/hMQoYDbn3QD4a3J/wIm0X9yF7D3lngj5upvoI8i6SX/1lHBYFUjdJ9FX/kPaqDXpslfUeCA' +
  'I2GoQZzmUfIYyNtj/qDEEmtSowknwTD6dOnTqWvrQYOmAAABF0GaqKBnKq/m8n7/hHsjxYMT0q/hH/VWKjwYf6iv0KEwMwFuegI/' +
  'wtuU1gtGna4dGy+vXSlCIYhnYkUBA4XEYJWu2MqTMJNqzvMIb2VZpfc4ZKyxT/I+uEY6EL9rwkPRsGXUNLdyIg+mb5Ho/Hcn8T8I' +
  '+IWxsGcVwahl8c2/yL1EQiELBjhEmqYI4MEGG1xxAShsVthv1OcBN2l8vwA3E4Utlj6WDEw4QQmLtNOO50lhY3WrmTJSX/3EgeA2' +
  'WJ+MEIAUKm8XII4AMnf6WLAvUrrGf4j7+IKjyEofCS1/gIl189+gucg539h4I9WraQpQLAC/Oc6fu1YYvL5L+kngwOip+R8+ev8E' +
  'ARiaYMcm6/wVQIIaB+lpcAAAASVBmriwIcsubx9jmwtw7veEE/Mze+ODvnxe/GLn9v+/Hz0y/hqXbpR17Xwc5f+E+lhMMBHvCQZA' +
  'gwvwStdsZSTMJNpZ3gI3HSlJ259iv5f/z0W/hKZW536wgE89fB9Nz11c3/S8YwqtVd7RFTan/9BftAxJkDE2XykLSNo4rcg0jlht' +
  '6sWBIdJLtYuEAynfgBJLv/+L50qBf9Or1YaAgrO0nBjSy6CHi/1PX8aD2Rx2/HEi+ieVi2GwIJP6bMw/79ND+rGuLigyetflSw3Q' +
  'A35btXP79+hXDwRPMn53j/hfq9QQE5cB6z1qWBw+wJB1TwINz4Aa24iN/aADRZw1dftAojhPe0BOCCgWDmrDcBgwXqsTx7wpGwMr' +
  'wTf2A8bH+ARHNkXa/A==';

const THUMBNAIL_PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAKAAAABaCAIAAACwpMoFAAAACXBIWXMAAAABAAAAAQBPJcTWAAAIWUlEQVR42u3da1BTZxrA8Xfb' +
  'ztoZbN3utlpr1d2qXbcqUgaVbUla12ovoiACbQcRIyiioCBgIUK5hmsCCkoIFwG56BLkIoRAuFoQBEHEeqGlWHuxY6fTnZ1pv+wH' +
  'kn3ec1jmsCFMxFBy4uP8P5y8iWeS/MaXc+NIooh20kYJmXZEa8pGR02Zid8cE7xHE0Z0OlOGwI8F8BIi/L+EfyA0Mp2m+dcMJBCY' +
  'MlO8JwRGYN4Az6cJFtHeWkpDYARGYHMFtiPPQA+ibaCfYxdDTn8ikPN82k+xi6Af4xdCO5cTSGBNc7Clcb+AZa/ThlMXjceOGBo3' +
  '9E2yz/6QsGA8t/VkPP1xQ6jc138Xawe9ROaOx44YM24JwE3xp0BXREjw0wSAu1I+YoEvp7qDrvg5In6BAHBruvPUwKeL3cHPbyGB' +
  'YAEeslqTjk8BDC8AlYRXCQQLqqwtrBYs6I9PATz+ehdCAEyZks+awQI8hEFjxnkJzO7YCJ6gsXtIwrlMzBTN3XMam6KX09gRFvjQ' +
  'cnIj1fa61MZ/JRG8SWOfXS+ksd8Jdz1cQu7IlhWkQW4PwQL3WS4Vdz3644aAuc+yq57wfjhvaOpxfeB3GpsmDYERePaA98whI/EO' +
  'wxIHkdWEL9R3PhlKtL+dtN534QTgsSl6A40L7LeGXE236U232b9qwnq4kPrk+vyHrcm1NGsIFrjr0R+fGph9fVfigXVkwnrgIQwa' +
  'M2488KMwIzAC/7ZT9M7VNNe1NP0p+nUBjbueZQLaEiZ25Hkhjbulzfcp2tKANZmODZkfPDowbDNzt6sR2MTA239P+iW7/xWzOOip' +
  'h9hN0gd2WU9q5e/dT1wQt4LELCOwcEHh+J4d2WRHynMdv01aKP4zCVtCYKE439nedgx4rS3JL3TJLXJZbUvmCGnT203iTt0zvZs0' +
  'NfD0sGcWGAJgyPgDHfpTNABD4Doe6LLAELiOB7pcYGg10zjwNA50TAo8Qwc6eAYsfJqJM0VPcqiSmaLfeo1maCPrDQGNO0WvYVrJ' +
  'xJ2iX3KgscDzmKwENBb4dwLa/6bJp5isIHM7VInACDzbwAY/jVkCE8E8mvB5muBFyHxONjw6NgIjsAmB9TNLYCJ4mSb8C02wgmkV' +
  'hMAIjMBGZpbAxGEtTbiO6e80Iz6Kqc4HI7D5ApvkfLBlARu4ZMfsgIVCmj2THZM1k8EDk1MdqkRgBLZ04EkuxDFP4FVMr9LGTro8' +
  'S1pku6c+XcibS3YQGIFn/MJ3cwMmi4W0+bSxkWeFNARGYAQ2qtkCXvLivNzT0rsJ1l5ziMcT5K7E5uzJjMVznxkDfm2UtkBHe1IL' +
  'WZFRKwTmFzAEwDSJDQS6CPzb/erKTAOTpUycKZr8kWlK4KVMtkxbiA5CYARGYON++cw8gT8iWsifib2UL4MJgREYgY08vW+WwGVM' +
  'jUx9RNc3cTJHYAR+eGDTZtY3YWE/9k+jtDtaWgdTDdMZHS1VSwvT0byZnEdpQh1tBoDvEi30C5OW/AfSkfsQAiMwAht5GyWzBNaS' +
  '69AoaYG0RAkhMAIj8ENlZsBaIod0RAJpSRCTF4TACIzARmaWwDriCGnJBmiULIN05DkIgREYgY27GSkCIzACW9bthBEYgRHYEm8I' +
  'jsAIjMCWdUt/BEZgBLbE/5QDgREYgWcP+JR7p/zjbr/yxj1F1cHH62KSP8sQdZWGfFHrNaL2/sa+O29dpyIyqT1NMdi48ubQu78Y' +
  'c8kOApsRcPXRewqPHueThV6FVcfjmiPiW7L29cp2XTq9sa3YqX/TjXOrm06ERKlF/iX9Dg80f7vFe+BoA38sFThnTy9Ukn0vLbZX' +
  'nNIqCiqVlnwenKqp2DxYIuhJjuqWy24Vvt1durmv4o3r7du/f5SL7hB4FoCzdnUV+30e6FNxdH+lNO96UIzK1T83VNbcsGOk2e0b' +
  'P69zceGXQLc/4NdKhxuXnO4jMM+AQ2Lr/T5RhgeosqU3mx2G1RtuB5Q0BZdfKnEdKN55zTGn0FfVlFgysCfyvEhdv7dBzfvLZh83' +
  'YFnuQGicOia0JfZY60XbwVtuv74fLd+rqM5z7Fbtu/dORvb+Oo13tDLkZLNHTbVNggSBeQZc4fNl1vbOoLTGw6n1PqmVx/Lbez78' +
  '+cKbg+51lf8ozHHvqoV8vIqzM++8f/Wf7/acQ2CeAVf5jsidLh+RqiFRkjJQrlFt+qJaeHObsvRDVdUrGVFbm86HBavTkvvtNdlr' +
  'qmQIzDPgWseh8k0Dih3dUERiW3h885n04WCf6kO1LZtl8gCZyjexShZ15XhAfVviv9Pc2xCYZ8AXt96BDeZ8t6uaow/EkpajkSrx' +
  'IbU0ssc1r2x/ZQMAfyJvK8n62n/3udOeXck7NAjMv/3gMz7X4rKv+EZU7Gys+KssOvBsy7aonI0ppw7UNPlk1nhKy0+E98qOdStj' +
  'v5V6dyAw334Gh34t2ar6NLNjn7h812cq9+aqcGWXZ3q5Z1m1qLzuoEIdVNiaHtYj9q4DXcmuZgTmGfC2/soPepWJwR1JIZ01oq/K' +
  '3Add/RSx8u6kiM68E0PxHk05QYOHDiuDQmq2Kgo8lTUIzDPgV87Gvd1eFB/YLg27UuDUe9alPzRFA8CRQY3BvlXwr7bg2G15zp3o' +
  'uPYdBaU+FxsQmGfAmW4dtaHfJcRcDjlSKy0aPBB5QexSVfbpsKTg6t6I88UBtyVODSq3r4o2XjnY1Ppx+QUE5tuRLKeWIu/BIwcr' +
  'FaeGEvP6YH6O82g4Hz2SXDzgHpin8O4D4xbP78u29O+rb7SOikXgx+6EPwIjMAIjMAIjMF6yg8AIjMAIjMAIjMAIjMAIjMAIjMAI' +
  'jMAIjMAIjMAIjMAIjMAI/FgC/xdC1dB61zO5iQAAAABJRU5ErkJggg==';

const SPRITESHEET_JPEG_B64 =
  '/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgMDA4MDhAQEBAQEBMSExQUFBMTExMUFBQVFRUZGRkV' +
  'FRUUFBUVGBgZGRscGxoaGRocHB4eHiQkIiIqKiszMz7/xACpAAEBAAMBAQEAAAAAAAAAAAAGBQgHBAMCAQEBAAMBAQAAAAAAAAAA' +
  'AAAABwYIBQQDEAABAwIDAwgJAwQCAwEAAAABAhEDBAAxEiETQQVRsmFxMjOxInIGgZGCoRQ0YnPSUsKSI9HhFUPBQmMRAAEDAwID' +
  'BAUJBwUBAAAAAAERAwIAEgQhBRNBMSJxBlGRYbGBQgcjoTLB0TVSFIRyc8NFMxXhgnRT8bP/wAARCAAtAUADASIAAhEAAxEA/9oA' +
  'DAMBAAIRAxEAPwAHFSCUKUZpBpIpgos6VlIiDDEgPiT+N/EdMtFQyaiVh+RB7rNkfHM/l7Pz0s1IoplW381eN9aJwccbxJQdKm8F' +
  'R0tGlSLLel85EiUorMTBmUMVKgjypZMmaNDiqnJypV3h7SlAGNtPMAX1IP4i+ukkqdk/1tSnRatJVgZkqKcjBxmID6EnoNjiQd9/' +
  'IURhfKcczjasSVVTGP3VF4zxmXb4sQAtTs+1aZ/VVu2y/WVWRnfayY7PNk630wfoszNw+KNAUlUiyQhTP/IqdOkZLoZyAM+LpF8u' +
  '0VcyOEqmiSrNlXIkHL2vMWcbnvbwWXce8xd4A0MhAJei9bSDpXYMhlzSwEk6L8K8ulIeHUgVxBUYWWQ5DsTgNNG5bYTQKhLHUcth' +
  'eHAwVpAKhkWtLnHRxr7L2NJUCSJiPN8rS4yyLMSV3FhJqAOnaHXtk9devWt3bJ5zM4SZhxMaeRJp5uICtyKfPKi2xCBOmlIOFdwr' +
  '0z4C7dxOFdwr0z4C7d8T/wDdn30FeKPxzcP48vYK0fHSheZSppBpIpgos6VlIiDDEgPiVfjfLFGtNSEpmmHTmLvsc+R8cz+Xsex9' +
  'LmykGaT01eN+wQksWsvQprI6jpaEGlOeXkk8WEhIxJmCDIoRqEI6IaSzJmjQ4qpycqVd4e0pQBjbTzAF9SD+IvspJKnZP9bUp0Wr' +
  'SVYGZKinIwcZiA+hJ6DYw36oUwvlkwZQRQSqrZGow1LHbeUY8IdkjTT6aVLrK4S5RVViksMJZH1RmI3nTfo/RZhdFGnattVZFpCd' +
  'e2C74Rns7wl1aFwL9H0xs7ElK5UpWvIkq1UxPuAfU4Dr1vb22M2g6W3C0gjdYDG5F/IQvMe+u4ziSBwwVOikaLy1FKOHUYVWzJCy' +
  '0KcwdiS+UNo2Gb5W1NKRGVvhusFRxin4guNJJEci0gnEgPjoPC9i/UgxqBGpfDDW0i7K4OI5GZcjJptdAqeZOpK9fVW1iSzmse7E' +
  'io/Wo7CMYy7HZu6hQE6kdEq9wr7dXpnwF27icK7hXpnwF275n/7s++gvxR+Obh/Hl7BWjo6USZlKmkGkimCizpWUiIMMSA+JV+N8' +
  '0Ua01ISmaYdOYu+xz5HxzP5ex7H0uVPEdtKHwWrxvyTEtJcizSDVwkro+roLR5cqdczJCPRN0gswYmckkNdE6a0zmTNGhxVTk5Uq' +
  '7w9pSgDG2nmAL6kH8RfZSSVOyf62pTotWkqwMyVFORg4zEB9CT0Gw99kZ0vhmwsEJidVWyNRXHnjh66OPCPZIQfelKjV1m1Kfq6w' +
  'oy7pZCX2ebLy6b9HbdZddChCH85XocoXm0K1hnEbuAAohs+Plv0s5EjaSpQxVmUwAVl8x0HmILa43s7dFxsOSbdLKWmdgtvRetpH' +
  'StEzgSnDBU6L8K+6lnDKISV0yAsgQoUsOASrQeXd/L5W0ip9oWdr15w4oRW/4irKFHKTjonfoN/ReyIqkJKioankGlpBOXwGJxmX' +
  'BJiCdkXAhQSVUm7r6q1sWec1gZMsOJlMuyEYwjGRjNI6oRqE9lIeGjLEsckih8hdi43DFZoVnlkPgLs3yOrfJevPvSgnxJd/mM2/' +
  '63E7X71oX6a0dHSiTMpU0g0kUwUWdKykRBhiQHxKvxvmijWmpCUzTDpzF32OfI+OZ/L2PnpcGZ9rJ6avG/NJYvZsGpIe2qjQWjTS' +
  'n7LdUPRN0h21iZSSQ10TprTuZM0aHFVOTlSrvD2lKAMbaeYAvqQfxF9lJJU7J/ralOi1aSrAzJUU5GDjMQH0JPQbCJOYX3xnS+Nz' +
  'GIiYyIUHnCNRJkswfUY8IdkhB19KUs+qrTMUfWVeXKS+2kx2efK/LuwfosouiQnattVZFpCde2C74Rns7wl1aFwL9bn09ImWNKlF' +
  'YO1kSf4nLEVpylicyleV2OOgJvV2+7HDsoO8Edi6wGNxCnW0g+Y99aKiZQNglSdSNB5ajlVLh1MFcTEAUQAVMSxOkZVubqtpszgN' +
  'bD0Uf09ckJUSzEHeCY8xBw1BLYDqvYqKhIUFEF216+X3fO0y/JDOK5El6EseOidq4GRuJ69oJz0T11u7fPLx8bIcYhxUdn8xEKTI' +
  'RHMcunTypBw9BiQUY65n92l2Lk8PVnjWr/8AQ+5hda8+V1xv1lz+73VXjfeN/k8rjpxr/nE6XkAnTRPKtBroo1qKnXqSd2/2X10n' +
  'DIZJ0JKpGL4EchPJfVdGg+5j+LmmyqbzghJJHSJ8vKrY7vhY7e35zsWwJxx35iSlRIQJB6p1rv8A+gpf5ze9P7bQ0HqrQ1ESlKkq' +
  'AQsjRSMGH4X9bTxttwnuF/qHmpuN5mTnMNgylNtTooA+yq9bTLLlmQhkhy2TcyBOKKgHTQdKJSeplEezNONN5Qf6RerDHwuUeSSo' +
  'SddF5QdOpJHzvJw4HqN4eHE9ZtO8DylvEcwZZ4nA4NhQA9viLcnX6oqRZmKIyjJtxxslVAIMfQQU9Nd6kiBY2a31dwdfeLv09TIr' +
  'RRd+i4NCkKqEBQBBzaHUdk27j4fGWUk5eQWwP/p8VuDZSMYgCP06VKNok7jMl4viDZcsKyIWSAqiEFRVygrYoI8i82qncBwAQMbS' +
  'R1MErZJEEnAOyvcdbHxUEkqVFBScpIY6EkDd/wA3LmpaiEnPGtIGJZ06/kNLg24vhiV4FwOp/wBK5c/wttW+5LzrG48PKmb3W7m3' +
  'AJSH/WsHI8uZoiqijUoqzLDknRt/svvpKBEkyUFcjF31G4H8b9rq8PT/AJgvcjH2giy+U3pRIiSZIUAA8qRN3wsZvAzHINxDgZdM' +
  'DqvEMTamvW5E9ddf/Q0v85ven9t90PqvFMkqSZiAW7SMerJdTbJ6bYcGlC45UgHyqB/uH/F4jmRn4kC6YzQELdFAh06iq64TW4ZT' +
  '4bfnkNRMZG+yI1A0GsUrXS/VqnR2jUDrUn9llqzgdLD2FS6dKf2i8jlpSoFwD1h7xaVxWqWVbRSZHO9IDdWVrUvCuQ1vUXrce2TH' +
  'DE7pAiV9yWkJ+Uqortnh7jiTB/VB6J6aCJ96/fXLSJTTVAJdg/SdRbVMiVgZS9iEPPKAnEvp1B7Z01DIEpUSzu45P92oZMWmIQBI' +
  'bAAiB3KdKS9lz/0rBDqRhNz65uHbt1ConQKlOOFdwr0z4C7d69E81KSI1kezT3Fw90E8aWl88SVcmUlPjmuE5b7TU5SlJInUHVKg' +
  'm/8AhTdc3NfzsVtvJZyJcWFk4iYjIBFjOz6FofFDQrlUqoFQMxKnjUg6k/xUnD22vh4TwOocR1cpI3FSUE9QXGH9li7tUMJC0SuM' +
  'vm68CLI3G3nAeG44CAtoESCneF+ml7edsxWsV9+BLc4wnKEF0cmImQgAVKyI5VSl9XaJPZkmPWpH7L/YeA0e9U/9yP2XV2yem69C' +
  'YZ1CMmQLUSxDZWAfXffmzLJb1yA6Gx9aVh7I5y0ChPPlVfrt2ccVpt1sooEoxA05doAFfLnUdPq7wxiVy1SeooP9F6PkpFxnzpWn' +
  'kBBHiLyhloZAg5WV8r01WTRy5ilSVgchBtW8N4+BMOzi6cwOWAiU4y4RF35REi5fi8q7mNxzr+HlMcMjobTBfSsT7qKcOSE1SG/L' +
  'H0TbuwsBKJcycQ9u6dJmQlTjXEAYe83PsoNsCHSEIi0errpS9smYxjYsuNOy51QSChWI5gddKXcK7hXpnwF27P0MsUCVRrkSk5n8' +
  '2mjDedLQXE3irkiNQTVf/E+u85s0Ns3TKBIIEokBJBUUGhsHqzS1ClLWuV1EkhJQ2vWk30y+qNABpJUD4kfssbBVVFMXilXHrmZJ' +
  'LE9IwPttVSccqploilyLBzOpmUdCdxy/Kwpz/IwKtugx8gAoHvH21YLedqfaZedZMbIxnKdpIkIgEkoevuU1PX6u0qP/ACSn2p/b' +
  'dmh9V6GdCiqWcEHcpGH9l9C6lKjgboROwIfXffa21n5Ask5NmROkpQHsoOGdlbe+HH4OzaNwEZdldOoJjyryPqfQsf8ALU4fyR+y' +
  '8eTGHOpxwvJaWsmhQ6Ve/W9FVdGmFSilRIfA/wC7UfCm1PMnKG4Ft8T4XBIJ5X3aJEjrHrUmb3bHzBHhXwPMSHsIJBrk4ckJqkM/' +
  '/wBY+ibd2HofLUoJ0Guvwm9hIhzgHM1oWXw8eyISEIxAA5DU0obG+2xhTm7IQBeIU8yYx8taS8K7hXpnwF27j8NTkiWPzPNF2Lib' +
  'xBckR0JquviWcXN5zpRKxk8SD5ggIa0xdGg+5j+Lmm510qD7mP4uabHnP7c/3T7KtvvX4Xn/APFf/wDnKlLKfQb7fcJ+3V+oeamy' +
  'FsOE9wv9Q81Nx/dcyWW1C6MY2Hkuq/8AlVx2zcJ52ezdCMLG3UQkqoj591Wzgeo3h4cT1m8wzgeo3h4cT1m1D5M/6n+zfzalmZ8H' +
  'v+yqXD/uo/i5pvYkc2QMz3rvh/3Ufxc025te3BqDsoiakID1TzqXbLitZmDODoJAfMghIINkRy76YcOVnjWcPP8A0pu1cPhXcq9M' +
  '+Au5cSdiIzkB0Gn0VX3xJHg71mxgoseSJXUWgJr51pi7FARmUnepmHU9x7pUH3Mfxc02SBws/OAA2glD3VbXevwzMl+Rmbg9ZbF4' +
  'HcSENKNkvkthwONSUzKI0JSB1h38RZ+1/Ce4X+oeam8PctzcfxZtluAEjHUEqEK/ZVedr3VzMyQ1JuERbKSgldB66uHA9RvDw4nr' +
  'N5hnA9RvDw4nrNo3yZ/1P9m/m1Jcz4Pf9lUuH/dR/FzTexI5sgZnxvXfD/uo/i5ptza9uDUXpCMlRF0KedS7ZsVrMwJtu3W8eR7M' +
  'jHWwDl30no4YaqNZkjB/ydIPZG8Mb85OCxqbJIpPLmAV7my318K7lXpnwF3LhWXjNOmUJBYjQalU76J9z8Rbrs27ZrGLlT4LbpjF' +
  'ty12IAiAEvBI/wBpFaYtDRyJKURg+bXT3mz10qD7mP4uabL4vFi6YAKROh9NWE35oT25+akFiE3wPzFtuRET6jzTWlGyXyXe4VTS' +
  '7dEuXyJKgS40OXkx33w2v4T3C/1DzU3kZm8OHHcjwm+3Ew6y0Egi0AbXujmbkxak3CItlJQSvZ76uHA9RvDw4nrN5hnA9RvDw4nr' +
  'Nz35M/6n+zfzakuZ8Hv+yqFEkSVCEnAv4G9gRLESEp1Lb3x1sDw/7qP4uabc2w58A4RCSoi6aa61KtmwWM3Dlxok2vFCJGJ0iNNO' +
  '816yQzTJMiI1KDtpqXbkGvtubDJIgnJItD4sSMLd8L7lXpnwF1lxRytnQhbYZkgt77ONww3HJENOWGOg1kOnrFYWZ4uwMLKf23N2' +
  '7js40+FCQsdWMQEug6EXp8XrrT10KH7hHxc03PulQfcx/FzTZxI2xMvIL6KV94lbtmdLyxnj6GzSjZq5LfcI+3V+oeamyNr+E9wr' +
  '0z4C8LdM9zJZiDEQtmoMSV1quG3bhLcMxuDjcAIwcPMqoHUGuyejgmScydxw0vGCasM2ikgFzqD/AOryvOB6jeHhxPWbVfk7yX8u' +
  'OdF92boa4HDvkTbdxFQnXVBW5kYWM1OM22oNkqtgtB9w0+iu+AupgHJt3TTZI0pIwsPw/wC6j+Lmm3Nq2e3FxISB81BTzFTnaMNv' +
  'OxjxFti4RaCnSPVe6RqijiclO+VCSklyC77sC/RdaLjES0uY5Ad4DEe9x4XwUvD46uJalKUlQJAZmwGIbX33FXD9PMuPNmZtWbEP' +
  'hrZZumTkYMuxYR07QX2EVxZHh3w5u2S+1AvQyWCA/wAOTgKgAal2Emz1H1K//9k=';

/** A valid, playable MP4 (H.264 baseline, 160x90, 1 s, +faststart). */
export const SAMPLE_MP4: Buffer = Buffer.from(SAMPLE_MP4_B64, 'base64');
/** The largest video `[sim:video-kib]` makes: 64 MiB. */
export const MAX_VIDEO_KIB = 64 * 1024;
let padded: { kib: number; bytes: Buffer } | null = null;

/**
 * SAMPLE_MP4, or for `kib` > 0 the same movie followed by a `free` box (which players skip) to
 * about `kib` KiB: a large, still valid download. The last size made is kept, so the downloads of
 * one test share one buffer.
 */
export function sampleVideo(kib: number): Buffer {
  const size = Math.min(kib, MAX_VIDEO_KIB) * 1024;
  if (size <= SAMPLE_MP4.length + 8) return SAMPLE_MP4;
  if (padded?.kib !== kib) {
    const free = Buffer.alloc(size - SAMPLE_MP4.length);
    free.writeUInt32BE(free.length, 0);
    free.write('free', 4, 'latin1');
    padded = { kib, bytes: Buffer.concat([SAMPLE_MP4, free]) };
  }
  return padded.bytes;
}
/** PNG served as the `thumbnail` variant of an OpenAI-style video. */
export const THUMBNAIL_PNG: Buffer = Buffer.from(THUMBNAIL_PNG_B64, 'base64');
/** JPEG served as the `spritesheet` variant of an OpenAI-style video. */
export const SPRITESHEET_JPEG: Buffer = Buffer.from(SPRITESHEET_JPEG_B64, 'base64');
/** PNG served as a character's profile picture: the gateway's own default avatar. */
export const PROFILE_PNG: Buffer = DEFAULT_AVATAR_PNG;

export type ImageMime = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

/**
 * The image type of `bytes` judged by magic bytes only, or null. Uploads are checked this way
 * because a client-declared mimeType proves nothing; real providers reject non-images too.
 */
export function sniffImage(bytes: Uint8Array): ImageMime | null {
  const b = bytes;
  if (b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47 && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a)
    return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'image/webp';
  if (b.length >= 6 && (ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a')) return 'image/gif';
  return null;
}

/** True when `bytes` starts like an ISO-BMFF file (MP4/MOV): a box whose type at offset 4 is `ftyp`. */
export function looksLikeMp4(bytes: Uint8Array): boolean {
  return bytes.length >= 12 && ascii(bytes, 4, 8) === 'ftyp';
}

function ascii(b: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...b.subarray(start, end));
}
