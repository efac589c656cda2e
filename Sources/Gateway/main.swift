import Shared

print("gateway: not yet")
