await AuthServiceApp.run()
